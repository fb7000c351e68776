"""Per-model rate limits (``--rate-limit MODEL=RPM[/TPM]``): token buckets shared by every call of a run.

A :class:`RateLimit` is what the user asked for. :class:`Buckets` is the arithmetic, with an injectable
clock: one bucket of requests and, with a TPM, one of tokens; a call *reserves* (1 request, an estimate
of its tokens) and is told how long to wait for its turn; the token estimate is settled with the usage
the reply reports. The buckets adapt (AIMD): a 429 halves the rate they refill at (at most once per
second of the window, so one burst of 429s is one cut) and makes every caller sharing them wait the
``Retry-After``; each call that succeeds gives back a twentieth of the full rate.

Where the buckets live is a :class:`Ledger`: in this process (:class:`LocalLedger`, the local executor:
every trial of the run shares it), or in a Ray actor every worker asks (runner/ray_limits.py). The
:class:`Limiter` in front applies the trial's deadline: a wait that would not fit in the time the trial
has left is not started, the call raises :class:`~passhat.errors.InfrastructureError` (outcome ``error``,
the rule of docs/design/007-outages.md), and a time limit reached while waiting is the provider's.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from passhat import outages
from passhat.errors import InfrastructureError, PasshatError

BURST_SHARE = 1 / 60
"""A bucket holds this share of its limit (a second's worth of a per-minute limit), at least one request
and at most half the limit; it refills at the rest of the limit over the window, so no window-long
stretch of time sees more than the limit."""
RECOVERY_STEP = 0.05
"""Share of the full rate given back per successful call after a 429 halved it."""
MIN_SCALE = 1 / 64
"""The rate is never cut below this share of the limit (halving without a floor would stop the run)."""
LATE_S = 0.05
"""A call that reaches its turn later than this takes a new one (see :meth:`Limiter.acquire`)."""
MAX_TURNS = 3
"""Turns a call takes at most; after the last it goes, late or not (a loop that busy is the bigger problem)."""
OUTPUT_ESTIMATE = 1024
"""Output tokens reserved for a call that sets no ``max_tokens``."""

_NUMBER = r"(\d+(?:\.\d+)?)"
_SPEC = re.compile(rf"{_NUMBER}(?:/{_NUMBER})?")


@dataclass(frozen=True)
class RateLimit:
    """A model's limit: requests (and optionally tokens) per ``window_s`` seconds."""

    requests: float
    """Requests per window (RPM with the default window)."""
    tokens: float | None = None
    """Prompt plus output tokens per window (TPM); ``None``: not limited."""
    window_s: float = 60.0
    """The window the figures are per (a minute; tests shorten it)."""

    @classmethod
    def parse(cls, model: str, value: str | float | RateLimit) -> RateLimit:
        """``"500"``, ``"500/30000"``, a number of requests, or a RateLimit; a PasshatError naming the option."""
        if isinstance(value, RateLimit):
            limit = value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            limit = cls(float(value))
        else:
            match = _SPEC.fullmatch(str(value).strip())
            if match is None:
                raise PasshatError(f"--rate-limit {model}={value}: expected MODEL=RPM or MODEL=RPM/TPM "
                                   "(requests and tokens per minute, e.g. gpt-4o=500/30000)")
            limit = cls(float(match[1]), None if match[2] is None else float(match[2]))
        if not model or limit.requests <= 0 or (limit.tokens is not None and limit.tokens <= 0) or limit.window_s <= 0:
            raise PasshatError(f"--rate-limit {model}={value}: the model must be named and the limits be > 0")
        return limit

    def describe(self) -> dict[str, Any]:
        """What the manifest records."""
        return {"requests": self.requests, "tokens": self.tokens, "window_s": self.window_s}

    def __str__(self) -> str:
        per = "min" if self.window_s == 60 else f"{self.window_s:g}s"
        tokens = f", {self.tokens:g} tokens" if self.tokens is not None else ""
        return f"{self.requests:g} requests{tokens} per {per}"


def parse_rate_limits(items: Mapping[str, str | float | RateLimit] | None) -> dict[str, RateLimit]:
    return {model: RateLimit.parse(model, value) for model, value in (items or {}).items()}


def parse_option(items: tuple[str, ...]) -> dict[str, str]:
    """``--rate-limit MODEL=RPM[/TPM]`` options as a mapping (a model name may contain ``:`` and ``=`` not)."""
    out: dict[str, str] = {}
    for item in items:
        model, sep, value = item.rpartition("=")
        if not sep or not model:
            raise PasshatError(f"--rate-limit {item!r}: expected MODEL=RPM or MODEL=RPM/TPM, e.g. gpt-4o=500/30000")
        RateLimit.parse(model, value)
        out[model] = value
    return out


def estimate_tokens(request: Mapping[str, Any]) -> int:
    """Tokens a request may use before it is sent: its text / 4 (prompt, tools) plus its output cap."""
    prompt = len(json.dumps(request, default=str)) // 4
    cap = request.get("max_tokens") or request.get("max_completion_tokens") or OUTPUT_ESTIMATE
    return prompt + int(cap)


class _Bucket:
    def __init__(self, limit: float, window_s: float, now: float) -> None:
        self.capacity = min(max(1.0, limit * BURST_SHARE), limit / 2)
        self.full_rate = (limit - self.capacity) / window_s
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float, scale: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.full_rate * scale)
        self.stamp = now

    def take(self, amount: float, now: float, scale: float) -> float:
        """Debit ``amount``; seconds until the debt it leaves is paid back (0: go now)."""
        self.refill(now, scale)
        self.level -= amount
        return max(0.0, -self.level / (self.full_rate * scale))

    def give(self, amount: float, now: float, scale: float) -> None:
        self.refill(now, scale)
        self.level = min(self.capacity, self.level + amount)


class Buckets:
    """The requests and tokens buckets of one model (see the module docstring); not thread-safe."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        now = clock()
        self.requests = _Bucket(limit.requests, limit.window_s, now)
        self.tokens = None if limit.tokens is None else _Bucket(limit.tokens, limit.window_s, now)
        self.scale = 1.0
        """Share of the limit the buckets refill at now (halved on a 429, recovering on success)."""
        self.last_cut = -math.inf
        self.throttles = 0

    def reserve(self, tokens: int) -> float:
        """Reserve one request and ``tokens``; seconds to wait before sending it."""
        now = self.clock()
        wait = self.requests.take(1, now, self.scale)
        if self.tokens is not None:
            wait = max(wait, self.tokens.take(tokens, now, self.scale))
        return wait

    def cancel(self, tokens: int) -> None:
        """Give back a reservation that will not be used (its wait would outlast the trial)."""
        now = self.clock()
        self.requests.give(1, now, self.scale)
        if self.tokens is not None:
            self.tokens.give(tokens, now, self.scale)

    def settle(self, reserved: int, used: int) -> None:
        """Correct the token estimate with what the call used (more is debited, less given back)."""
        if self.tokens is None or used == reserved:
            return
        now = self.clock()
        if used < reserved:
            self.tokens.give(reserved - used, now, self.scale)
        else:
            self.tokens.take(used - reserved, now, self.scale)

    def throttled(self, retry_after: float | None) -> None:
        """A 429: halve the rate (once per burst of 429s), and hold every caller for ``retry_after``."""
        now = self.clock()
        for bucket in (self.requests, self.tokens):
            if bucket is not None:
                bucket.refill(now, self.scale)
        self.throttles += 1
        if now - self.last_cut >= self.limit.window_s / 60:
            self.scale = max(MIN_SCALE, self.scale / 2)
            self.last_cut = now
        if retry_after:  # a debt the requests bucket pays off first: later reservations queue behind it
            self.requests.level = min(self.requests.level, -retry_after * self.requests.full_rate * self.scale)

    def succeeded(self) -> None:
        now = self.clock()
        for bucket in (self.requests, self.tokens):
            if bucket is not None:
                bucket.refill(now, self.scale)
        self.scale = min(1.0, self.scale + RECOVERY_STEP)


class Ledger(Protocol):
    """Where a model's buckets live: this process, or a Ray actor shared by the run's workers."""

    async def reserve(self, tokens: int) -> float: ...
    def cancel(self, tokens: int) -> None: ...
    def settle(self, reserved: int, used: int) -> None: ...
    def throttled(self, retry_after: float | None) -> None: ...
    def succeeded(self) -> None: ...


class LocalLedger:
    """The buckets in this process (the local executor: one per model, shared by every trial)."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.buckets = Buckets(limit, clock)

    async def reserve(self, tokens: int) -> float:
        return self.buckets.reserve(tokens)

    def cancel(self, tokens: int) -> None:
        self.buckets.cancel(tokens)

    def settle(self, reserved: int, used: int) -> None:
        self.buckets.settle(reserved, used)

    def throttled(self, retry_after: float | None) -> None:
        self.buckets.throttled(retry_after)

    def succeeded(self) -> None:
        self.buckets.succeeded()


class Limiter:
    """What a model's calls go through: waits for a permit within the trial's deadline, reports back."""

    def __init__(self, limit: RateLimit, ledger: Ledger | None = None) -> None:
        self.limit = limit
        self.ledger: Ledger = ledger if ledger is not None else LocalLedger(limit)

    async def acquire(self, what: str, tokens: int) -> int:
        """Wait for this call's turn; returns the tokens reserved (settle them with :meth:`finished`).

        A turn is a moment: a call that reaches it late (the answer from a Ray actor was slow, or this
        event loop was busy) would go together with the calls given the turns after it, so it takes a
        fresh turn instead (the missed one stays unused: the provider sees fewer calls, never more)."""
        tokens = tokens if self.limit.tokens is not None else 0
        for _ in range(MAX_TURNS):
            asked = time.monotonic()
            turn = asked + await self.ledger.reserve(tokens)
            wait = turn - time.monotonic()
            if wait > 0:
                await self._hold(what, wait, tokens)
            if time.monotonic() - turn <= LATE_S:
                break
        return tokens

    async def _hold(self, what: str, wait: float, tokens: int) -> None:
        watch = outages.CURRENT_TRIAL.get()
        remaining = watch.remaining() if watch is not None else None
        if remaining is not None and wait + outages.MIN_ATTEMPT_S > remaining:
            self.ledger.cancel(tokens)
            raise InfrastructureError(f"{what}: the rate limit ({self.limit}) would hold this call {wait:.1f}s, "
                                      f"past the {remaining:.1f}s left of the trial's time limit")
        call = outages.CURRENT_CALL.get()
        if call is not None:
            call.held = f"{what} was held by the rate limit ({self.limit}) for {wait:.1f}s"
        try:
            await asyncio.sleep(wait)
        finally:
            if call is not None:
                call.held = None

    def finished(self, reserved: int, used: int | None) -> None:
        """A reply came: settle the tokens (``used`` None: not reported, the estimate stands)."""
        if used is not None and self.limit.tokens is not None:
            self.ledger.settle(reserved, used)
        self.ledger.succeeded()

    def failed(self, reserved: int, *, status: int | None, retry_after: float | None) -> None:
        """An attempt failed: its tokens are given back; a 429 slows every caller sharing the limit."""
        if reserved:
            self.ledger.settle(reserved, 0)
        if status == 429:
            self.ledger.throttled(retry_after)


LimiterFactory = Callable[[str, RateLimit], Limiter]
"""How a run makes the limiter of a model (its name as the limit names it, the limit): in this process
(:func:`local_limiter`), or backed by the run's Ray actor (passhat/llm/ray_limits.py)."""


def local_limiter(model: str, limit: RateLimit) -> Limiter:
    return Limiter(limit)


__all__ = ["Buckets", "Ledger", "Limiter", "LimiterFactory", "LocalLedger", "RateLimit", "estimate_tokens", "local_limiter",
           "parse_option", "parse_rate_limits"]
