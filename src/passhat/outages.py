"""Whose time was it? Telling a provider outage from the agent's own slowness.

A trial's time limit measures the agent. Time lost to infrastructure is not the agent's: failed model
calls being retried, backoff between them, a stream that stopped mid-answer. These rules keep the two
apart (docs/design/007-outages.md):

1. Retries never outlast the trial: a retry that would not fit before the trial's deadline is not
   started; the call raises :class:`~passhat.errors.InfrastructureError` at once (outcome ``error``).
2. A time limit reached while a model call is retrying after a failure, or while a started stream has
   been silent for ``STALL_S`` or more, or while it waits for a rate-limit permit, is the provider's: the
   trial is ``error``, not ``fail``. A wait for a permit that would outlast the trial is not started.
2b. A provider that accepts the connection and then says nothing — no response headers, or a 200 whose
   stream carries only keep-alives, or one chunk and then silence — for :func:`stall_budget` (a share of
   the trial's remaining time, at most ``STALL_CAP_S``) has stalled: the attempt raises
   :class:`ProviderStalled`, retried and counted by the circuit breaker like a dropped connection, and an
   ``error`` when retries no longer fit (docs/design/022-bounded-trials-and-inputs.md).
3. A provider that keeps refusing connections is detected fast: after ``threshold`` consecutive failed
   attempts without an answer (connection refused, timeouts, 5xx) its :class:`CircuitBreaker` opens and
   further calls fail at once for ``cooldown_s``, instead of every trial paying the whole retry budget.
4. An agent that calls its provider through its own SDK is watched by the model relay
   (:mod:`passhat.serve.model_relay`), which applies rule 2b to that traffic. The agent's SDK cannot tell
   the harness that what it saw was a stall, so the relay declares it on the trial's watch
   (:meth:`TrialWatch.declare_outage`): the runner ends the trial at once as ``error``, whatever the agent
   would have returned.

The runner sets a :class:`TrialWatch` for the agent's task (a context variable, so the model agent, the
model-played user and their retry loops see it without being handed it).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from passhat.errors import InfrastructureError

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

STALL_S = 10.0
"""A started stream silent this long when the time limit hits has stalled (the provider's fault)."""
MIN_ATTEMPT_S = 1.0
"""A retry is only started if at least this much time would be left for it before the deadline."""
STALL_SHARE = 1 / 3
"""Rule 2b: the share of the trial's remaining time a provider may stay silent (no headers, no stream
data) before the attempt has stalled. A share, so a stall is found before the deadline however short the
limit (10 s → 3.3 s), and the answer a retry brings still has time to be used. A module attribute, so
tests scale it down instead of sleeping."""
STALL_CAP_S = 30.0
"""Rule 2b's bound in a long trial (and outside any trial: the judge): one silent call never takes minutes."""


class ProviderStalled(TimeoutError):
    """The provider accepted the call and then sent nothing (headers or stream data) within the stall
    budget. A ``TimeoutError``: retried like any timeout, and counted by the circuit breaker."""


def stall_budget() -> float:
    """How long the provider may stay silent now: ``min(STALL_CAP_S, STALL_SHARE × remaining)``."""
    watch = CURRENT_TRIAL.get()
    remaining = watch.remaining() if watch is not None else None
    if remaining is None:
        return STALL_CAP_S
    return max(0.0, min(STALL_CAP_S, STALL_SHARE * remaining))


async def unless_stalled(awaitable: Awaitable[T], what: str, waiting_for: str) -> T:
    """``await awaitable``, or :class:`ProviderStalled` when it takes longer than :func:`stall_budget`
    (a cancellation from outside, the trial's time limit, still propagates as a cancellation)."""
    import asyncio  # here: this module is imported by commands that never call a model

    budget = stall_budget()
    try:
        async with asyncio.timeout(budget) as scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():
            raise stalled(what, waiting_for, budget) from None
        raise


def stalled(what: str, waiting_for: str, budget: float) -> ProviderStalled:
    """The error of a call that waited ``budget`` seconds for ``waiting_for`` in vain (one wording, so a
    record says the same whether passhat's own client or the model relay saw the stall)."""
    return ProviderStalled(f"{what}: the provider stalled — no {waiting_for} within {budget:.2f}s "
                           f"({STALL_SHARE:.0%} of the trial's remaining time, at most {STALL_CAP_S:g}s)")


async def stalls_bounded(stream: AsyncIterator[T], what: str) -> AsyncIterator[T]:
    """The stream's items, each within :func:`stall_budget` of the one before (keep-alives are not
    items: the SDKs drop SSE comments and pings before they reach the adapter)."""
    it = aiter(stream)
    waiting_for = "stream data after the response headers"
    while True:
        try:
            item = await unless_stalled(anext(it), what, waiting_for)
        except StopAsyncIteration:
            return
        waiting_for = "further stream data"
        yield item


@dataclass
class ProviderCall:
    """One model call in progress (all its attempts)."""

    what: str
    started: float = field(default_factory=time.monotonic)
    last_data: float | None = None
    """When the current attempt last received stream data (``None``: none yet — waiting is latency)."""
    failures: list[str] = field(default_factory=list)
    """Failed attempts so far (``[]``: the first attempt is running)."""
    held: str | None = None
    """Why the call is waiting for a rate-limit permit, while it is (``None``: it is not)."""

    def attempt_started(self) -> None:
        self.last_data = None

    def data(self) -> None:
        self.last_data = time.monotonic()


class TrialWatch:
    """The provider calls of one trial, and its deadline."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        """``time.monotonic()`` seconds when the trial's time runs out (``None``: no limit)."""
        self.active: list[ProviderCall] = []
        self.outage: str | None = None
        """An outage seen outside passhat's own clients — the model relay found the agent's provider stalled
        (rule 4): the trial is the provider's ``error`` whatever the agent does next (``None``: none seen)."""
        self._declared: asyncio.Future[None] | None = None

    def declare_outage(self, description: str) -> None:
        """Rule 4: the trial met an outage its agent's own client cannot tell apart from its own failure; the
        runner ends the trial at once as ``error`` with ``description`` (the first one declared is kept)."""
        if self.outage is not None:
            return
        self.outage = description
        if self._declared is not None and not self._declared.done():
            self._declared.set_result(None)

    def declared(self) -> asyncio.Future[None]:
        """Done once an outage is declared (the runner waits for it beside the agent)."""
        import asyncio

        if self._declared is None:
            self._declared = asyncio.get_running_loop().create_future()
            if self.outage is not None:
                self._declared.set_result(None)
        return self._declared

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    @contextlib.contextmanager
    def call(self, what: str) -> Iterator[ProviderCall]:
        call = ProviderCall(what)
        self.active.append(call)
        token = CURRENT_CALL.set(call)
        try:
            yield call
        finally:
            CURRENT_CALL.reset(token)
            self.active.remove(call)

    def blame(self, now: float | None = None) -> str | None:
        """Why the time just spent was the provider's, or ``None`` when it was the agent's (rule 2)."""
        now = time.monotonic() if now is None else now
        if self.outage is not None:
            return self.outage
        for call in self.active:
            if call.held is not None:
                return call.held
            if call.failures:
                return (f"{call.what} was failing: {len(call.failures)} attempt(s) failed, the last with "
                        f"{call.failures[-1]}")
            if call.last_data is not None and now - call.last_data >= STALL_S:
                return f"{call.what}: the stream stalled ({now - call.last_data:.0f}s without data)"
        return None


CURRENT_TRIAL: contextvars.ContextVar[TrialWatch | None] = contextvars.ContextVar("passhat_trial_watch", default=None)
CURRENT_CALL: contextvars.ContextVar[ProviderCall | None] = contextvars.ContextVar("passhat_provider_call", default=None)


def stream_data() -> None:
    """Called by the adapters for every chunk a stream delivers (cheap: one context-variable lookup)."""
    call = CURRENT_CALL.get()
    if call is not None:
        call.data()


@contextlib.contextmanager
def watching(deadline: float | None) -> Iterator[TrialWatch]:
    """Make a watch current for the code inside (the runner wraps the agent's run in it)."""
    watch = TrialWatch(deadline)
    token = CURRENT_TRIAL.set(watch)
    try:
        yield watch
    finally:
        CURRENT_TRIAL.reset(token)


BREAKER_THRESHOLD = 8
"""Rule 3: consecutive unanswered attempts that open a provider's breaker, unless a breaker is given its own.
A module attribute, so tests lower it instead of waiting for eight stalls."""


class CircuitBreaker:
    """Rule 3: open after ``threshold`` (default :data:`BREAKER_THRESHOLD`) consecutive unanswered attempts; one
    probe after ``cooldown_s``."""

    def __init__(self, threshold: int | None = None, cooldown_s: float = 30.0) -> None:
        self.threshold = BREAKER_THRESHOLD if threshold is None else threshold
        self.cooldown_s = cooldown_s
        self.consecutive = 0
        self.opened_at: float | None = None
        self.last_failure = ""
        self.trips = 0
        """How many times it opened (recorded in errors, so a run's report can say why trials failed fast)."""

    def check(self, what: str) -> None:
        """Raise :class:`InfrastructureError` while open; after the cool-down, let one attempt through."""
        if self.opened_at is None:
            return
        waited = time.monotonic() - self.opened_at
        if waited < self.cooldown_s:
            raise InfrastructureError(
                f"{what}: not called — circuit open after {self.consecutive} consecutive failed attempts "
                f"(last: {self.last_failure}); next try in {self.cooldown_s - waited:.0f}s")
        self.opened_at = None  # half-open: this attempt is the probe; one more failure reopens at once
        self.consecutive = self.threshold - 1

    def failure(self, description: str) -> None:
        self.consecutive += 1
        self.last_failure = description
        if self.consecutive >= self.threshold and self.opened_at is None:
            self.opened_at = time.monotonic()
            self.trips += 1

    def success(self) -> None:
        self.consecutive = 0
        self.opened_at = None


__all__ = ["BREAKER_THRESHOLD", "MIN_ATTEMPT_S", "STALL_CAP_S", "STALL_S", "STALL_SHARE", "CircuitBreaker", "ProviderCall",
           "ProviderStalled", "TrialWatch", "stall_budget", "stalled", "stalls_bounded", "stream_data", "unless_stalled",
           "watching"]
