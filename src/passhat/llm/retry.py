"""Bounded retries with exponential backoff for model calls.

Rate limits (429), overload and 5xx answers, timeouts and dropped connections are the provider's
trouble, not the agent's: they are retried, and when they persist the call raises
:class:`~passhat.errors.InfrastructureError`, so the trial is recorded as ``error`` rather than ``fail``.
Rejected credentials or an unknown model (401/403/404) are configuration problems that retrying cannot
fix: they raise ``InfrastructureError`` at once. Other 4xx answers (e.g. 400 for a conversation too long
for the context window) are the agent's own doing and propagate as ordinary exceptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from passhat import outages
from passhat.errors import InfrastructureError
from passhat.outages import CircuitBreaker

T = TypeVar("T")
Verdict = Literal["retry", "infrastructure", "agent"]


class IncompleteAnswer(Exception):
    """A stream that ended before the model answered (a dropped connection in disguise): retried."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try before calling a provider failure an infrastructure error."""

    attempts: int = 6
    """Total attempts per model call (1 = no retry)."""
    base_delay_s: float = 1.0
    """Delay before the first retry; doubled each time."""
    max_delay_s: float = 30.0
    """Cap on one delay (a server's ``Retry-After`` is honoured up to this)."""
    jitter: float = 0.25
    """Each delay is multiplied by a random factor in [1 − jitter, 1 + jitter] so concurrent trials
    do not retry in lockstep."""

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        backoff = self.base_delay_s * 2 ** (retry - 1)
        if retry_after is not None:
            backoff = max(backoff, retry_after)
        return min(self.max_delay_s, backoff) * (1 + self.jitter * (2 * rng.random() - 1))


def classify_status(status: int | None) -> Verdict:
    """What an HTTP status means for the trial. ``None`` (no answer: timeout, connection error) and
    statuses below 400 (an error event inside a stream that had started with 200) are retried."""
    if status is None or status < 400 or status in (408, 409, 425, 429) or status >= 500:
        return "retry"
    if status in (401, 403, 404):
        return "infrastructure"
    return "agent"


def inspect_error(exc: BaseException) -> tuple[Verdict, float | None] | None:
    """Map an SDK or transport exception to a verdict and the server's ``Retry-After``; ``None`` for
    exceptions that are not about reaching the provider (they propagate as the agent's own errors)."""
    if isinstance(exc, IncompleteAnswer | TimeoutError | json.JSONDecodeError):
        return "retry", None  # a JSONDecodeError escapes an SDK's stream when the server sends non-JSON data
    module = type(exc).__module__
    if module.startswith(("httpx", "httpcore")):  # transport errors raised while reading a stream
        return "retry", None
    if not module.startswith(("openai", "anthropic")):
        return None
    status = getattr(exc, "status_code", None)
    is_api_error = any(c.__name__ == "APIError" for c in type(exc).__mro__)
    if not isinstance(status, int) and not is_api_error:
        return None  # SDK misuse or validation errors: retrying cannot help
    retry_after = None
    response = getattr(exc, "response", None)
    if response is not None:
        try:
            retry_after = float(response.headers.get("retry-after", ""))
        except (TypeError, ValueError):
            retry_after = None
    return classify_status(status if isinstance(status, int) else None), retry_after


FAILURE_CHARS = 1000
"""How much of a failed attempt's text is kept: an SDK puts the provider's whole error body in its message,
and a provider decides how large that is (up to the 64 MB answer cap)."""


def _bounded(text: str) -> str:
    return text if len(text) <= FAILURE_CHARS else f"{text[:FAILURE_CHARS]}… ({len(text) - FAILURE_CHARS:,} characters left out)"


def unanswered(exc: BaseException) -> bool:
    """The provider did not answer at all (refused, timed out, dropped) or answered 5xx: what a circuit
    breaker counts. A 429 is an answer: the provider is alive and asks us to slow down."""
    status = getattr(exc, "status_code", None)
    return not isinstance(status, int) or status >= 500


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    inspect: Callable[[BaseException], tuple[Verdict, float | None] | None],
    what: str,
    seed: int | None = None,
    breaker: CircuitBreaker | None = None,
) -> tuple[T, int]:
    """Run ``call`` until it succeeds; returns (result, attempts).

    ``inspect`` maps an exception to (verdict, retry-after seconds), or ``None`` for exceptions that are
    not provider errors (those propagate untouched). Inside a trial, retries stop where the trial's time
    would run out, and the trial's watch records the failures (passhat/outages.py); ``breaker`` fails
    fast on a provider that has stopped answering.
    """
    rng = random.Random(seed)
    watch = outages.CURRENT_TRIAL.get()
    scope = watch.call(what) if watch is not None else contextlib.nullcontext(outages.ProviderCall(what))
    with scope as progress:
        last = ""
        for attempt in range(1, max(1, policy.attempts) + 1):
            if breaker is not None:
                breaker.check(what)
            progress.attempt_started()
            try:
                result = await call()
            except Exception as exc:
                seen = inspect(exc)
                if seen is None or seen[0] == "agent":
                    raise
                verdict, retry_after = seen
                last = _bounded(f"{type(exc).__name__}: {exc}")
                progress.failures.append(last)
                if breaker is not None and unanswered(exc):
                    breaker.failure(last)
                if verdict == "infrastructure":
                    raise InfrastructureError(f"{what}: {last} (not retried: fix the configuration)") from exc
                if attempt >= policy.attempts:
                    raise InfrastructureError(f"{what}: still failing after {attempt} attempts: {last}") from exc
                delay = policy.delay(attempt, retry_after, rng)
                remaining = watch.remaining() if watch is not None else None
                if remaining is not None and delay + outages.MIN_ATTEMPT_S > remaining:
                    raise InfrastructureError(
                        f"{what}: still failing after {attempt} attempt(s): {last}; a retry in {delay:.1f}s would not "
                        f"fit in the {remaining:.1f}s left of the trial's time limit") from exc
                await asyncio.sleep(delay)
            else:
                if breaker is not None:
                    breaker.success()
                return result, attempt
    raise InfrastructureError(f"{what}: no attempt made ({last})")  # unreachable: attempts >= 1
