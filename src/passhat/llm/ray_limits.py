"""Rate limits shared by the workers of a Ray run: the buckets live in one named actor per run.

The driver starts :class:`RateLimitActor` under a name unique to the run (:func:`start_actor`) before the
workers; each worker's limiter (:class:`RemoteLimiters`, which the run's setup sends them) finds it by
that name and asks it for a permit before every model call. The actor only does the bucket arithmetic
(:class:`~passhat.llm.ratelimit.Buckets`) and answers how long to wait; the waiting, and the
trial-deadline rule, happen on the worker. Settling tokens and reporting a 429 or a success are sent
without waiting for an answer. Ray is imported only here, and only when a Ray run has rate limits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from passhat.llm.ratelimit import Buckets, Limiter, RateLimit


class RateLimitActor:
    """One run's buckets, one per limited model (a Ray actor; its methods are quick and never wait)."""

    def __init__(self, limits: dict[str, RateLimit]) -> None:
        self.buckets = {model: Buckets(limit) for model, limit in limits.items()}

    def reserve(self, model: str, tokens: int) -> float:
        return self.buckets[model].reserve(tokens)

    def cancel(self, model: str, tokens: int) -> None:
        self.buckets[model].cancel(tokens)

    def settle(self, model: str, reserved: int, used: int) -> None:
        self.buckets[model].settle(reserved, used)

    def throttled(self, model: str, retry_after: float | None) -> None:
        self.buckets[model].throttled(retry_after)

    def succeeded(self, model: str) -> None:
        self.buckets[model].succeeded()

    def state(self, model: str) -> dict[str, float]:
        """How the model's limit stands (the share of the rate allowed now, 429s seen): for tests and debugging."""
        b = self.buckets[model]
        return {"scale": b.scale, "throttles": b.throttles}


class RemoteLedger:
    """A model's buckets in the run's actor, seen from a worker (the actor is looked up on first use)."""

    def __init__(self, actor_name: str, model: str) -> None:
        self.actor_name = actor_name
        self.model = model
        self._actor: Any = None

    def _handle(self) -> Any:
        if self._actor is None:
            import ray

            self._actor = ray.get_actor(self.actor_name)
        return self._actor

    async def reserve(self, tokens: int) -> float:
        return float(await self._handle().reserve.remote(self.model, tokens))

    def cancel(self, tokens: int) -> None:
        self._handle().cancel.remote(self.model, tokens)

    def settle(self, reserved: int, used: int) -> None:
        self._handle().settle.remote(self.model, reserved, used)

    def throttled(self, retry_after: float | None) -> None:
        self._handle().throttled.remote(self.model, retry_after)

    def succeeded(self) -> None:
        self._handle().succeeded.remote(self.model)


@dataclass(frozen=True)
class RemoteLimiters:
    """The limiter factory a Ray run sends its workers (picklable: only the actor's name)."""

    actor_name: str

    def __call__(self, model: str, limit: RateLimit) -> Limiter:
        return Limiter(limit, RemoteLedger(self.actor_name, model))


def actor_name() -> str:
    return f"passhat-rate-limits-{uuid.uuid4().hex[:12]}"


def start_actor(name: str, limits: dict[str, RateLimit]) -> Any:
    """Start the run's actor (Ray already connected). It is owned by this driver, so it ends with the run
    or with the driver's process, whichever comes first; the caller kills it at the end of the run."""
    import ray

    return ray.remote(RateLimitActor).options(name=name, num_cpus=0, max_restarts=0).remote(limits)
