"""One trial's face to an agent that runs elsewhere: the episode behind a URL and a token.

The endpoint adds no rules of its own: every call goes through the same episode and tool boundary as an
in-process agent's (permissions → argument validation → planned fault → tool → record), so verdicts do
not depend on the transport. What a transport adds is honesty about faults: a planned ``timeout`` or
``drop_response`` withholds the answer for real (the request hangs until the client gives up or the
trial ends), where an in-process agent gets the timeout text at once.
"""

from __future__ import annotations

import asyncio
import hmac
import math
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from passhat import outages
from passhat.episode import Episode, LimitExceeded
from passhat.errors import PasshatError
from passhat.serve.protocol import ReportedUsage, TrialStart
from passhat.serve.watch import ClientWatch

TOOL_TIMEOUT_ENV = "PASSHAT_TOOL_TIMEOUT_S"


FAST_TOOL_TIMEOUT_S = 2.0
"""The suggested client timeout when every tool answers from the sandbox's own database: such a tool answers
in milliseconds, so 2 s is a thousand times that, and a planned timeout or lost response costs the agent 2 s
instead of a quarter of its time limit (15 s at the default 60 s limit)."""


def tool_timeout(time_limit_s: float, slowest_s: float | None = None) -> float:
    """The client timeout passhat suggests per tool call (a planned timeout costs the agent this much real time).

    ``$PASSHAT_TOOL_TIMEOUT_S`` when set. Else, when ``slowest_s`` says how long the trial's slowest answer can
    take (tools that only use the database, plus the longest planned ``latency``): :data:`FAST_TOOL_TIMEOUT_S`,
    or twice the planned latency and a second when that is longer — a latency fault must come back slow, not
    be turned into a timeout. When a tool may wait on the world outside (``slowest_s=None``: an ``async``
    tool, such as ``run_command``), a quarter of the time limit, 1–30 s. Never more than a quarter of the time
    limit (at least 1 s), so several withheld answers still fit in the trial."""
    configured = os.environ.get(TOOL_TIMEOUT_ENV)
    if configured:
        try:
            value = float(configured)
        except ValueError:
            value = float("nan")
        if not (math.isfinite(value) and value > 0):
            raise PasshatError(f"{TOOL_TIMEOUT_ENV}={configured!r}: expected a number of seconds > 0")
        return value
    quarter = min(30.0, max(1.0, time_limit_s / 4))
    if slowest_s is None:
        return quarter
    return min(quarter, max(FAST_TOOL_TIMEOUT_S, 2 * slowest_s + 1.0))


class PriceLookup(Protocol):
    """Anything with ``price(model)`` returning an object with ``cost(input_tokens, output_tokens)``."""

    def price(self, model: str) -> Any: ...


@dataclass(frozen=True)
class CallAnswer:
    """What a transport sends back for one tool call."""

    ok: bool
    result: Any = None
    error: str | None = None
    withheld: bool = False
    """A planned timeout or lost response: send nothing (hold the request) instead."""
    limit: str | None = None
    """The trial's budget ran out (e.g. ``step_limit``): the call was refused and the trial is ending."""
    abandoned: bool = False
    """The client went away while the call ran: there is nobody to answer (the record says so)."""

    def body(self) -> dict[str, Any]:
        """The JSON answer of the plain HTTP tool API."""
        if self.ok:
            return {"ok": True, "result": self.result}
        return {"ok": False, "error": self.error, **({"limit": self.limit} if self.limit else {})}


class TrialEndpoint:
    """The URLs, token and handlers of one trial. Made by :meth:`passhat.serve.ToolServer.trial`."""

    def __init__(self, episode: Episode, base_url: str, *, mcp: bool = False, prices: PriceLookup | None = None,
                 models: Iterable[str] = ()) -> None:
        self.id = secrets.token_urlsafe(12)
        """Path segment of this trial's URLs (random, so URLs of other trials cannot be guessed either)."""
        self.token = secrets.token_urlsafe(32)
        """The bearer token; valid for this trial only, while it runs."""
        self._token = self.token.encode()
        self.episode = episode
        self.url = f"{base_url}/trials/{self.id}"
        self.ended = asyncio.Event()
        """Set when the trial is over: held requests are released and later requests refused."""
        self.mcp = mcp
        self._prices = prices
        self.requests = 0
        """Authorized requests served (the transport's own count, for tests and benchmarks)."""
        self.model_urls = {name: f"{self.url}/models/{name}" for name in models}
        """The model relay's base URL per upstream name (``--agent-model-relay NAME=URL``; empty without one)."""
        self.watch = outages.CURRENT_TRIAL.get()
        """The trial's outage watch: opened from inside the agent's task, which the runner runs under it. The
        model relay declares the outages it sees there (``None``: opened outside a trial)."""

    def authorized(self, token: str | None) -> bool:
        """Whether ``token`` is this trial's (constant-time comparison)."""
        return token is not None and hmac.compare_digest(token.encode(), self._token)

    def start(self) -> TrialStart:
        """The start message of this trial."""
        ep = self.episode
        remaining = ep.remaining_s()
        limit = ep.time_limit_s if ep.time_limit_s is not None else 0.0
        return TrialStart(
            case_id=ep.case_id, tags=ep.tags, trial=ep.trial, seed=ep.seed, domain=ep.domain, instruction=ep.instruction,
            policy=ep.policy, identity=ep.identity, trial_url=self.url, tools_url=f"{self.url}/tools",
            user_url=f"{self.url}/user", usage_url=f"{self.url}/usage", mcp_url=f"{self.url}/mcp" if self.mcp else None,
            otlp_url=f"{self.url}/otlp", token=self.token, model_urls=self.model_urls,
            deadline=time.time() + (remaining if remaining is not None else limit), time_limit_s=limit,
            tool_timeout_s=tool_timeout(limit, ep.slowest_answer_s()),
        )

    def tool_specs(self) -> list[dict[str, Any]]:
        return self.episode.tool_specs()

    async def call(self, name: str, arguments: Any, client: ClientWatch | None = None) -> CallAnswer:
        """Call a tool through the episode (recorded like any in-process call). ``client`` watches the request's
        connection: when the client had gone before the call, went away during it, or before its answer could
        be sent, the record is marked abandoned with the moment. The tool runs in every case, as a real
        server's handler would once it has read the request."""
        if client is not None:
            await client.settle()  # a close that already arrived is seen as one from before the call
        try:
            result = await self.episode.call(name, arguments)
        except LimitExceeded as exc:
            return CallAnswer(ok=False, error=str(exc), limit=exc.reason)
        if client is not None and not result.withheld:
            await client.settle()  # and one that arrived while the tool ran, before an answer is sent to nobody
        abandoned = client is not None and client.gone_at is not None and not result.withheld
        if abandoned and result.step is not None and client is not None and client.gone_at is not None:
            self.episode.abandon(result.step, client.gone_at)
        return CallAnswer(ok=result.ok, result=result.content, error=result.error, withheld=result.withheld,
                          abandoned=abandoned)

    async def say(self, text: str) -> str | None:
        """Send a message to the simulated user; ``None`` when the user has left."""
        return await self.episode.say(text)

    def report_usage(self, usage: ReportedUsage) -> None:
        """Record one model call (or a trial total) the agent reported; raises :class:`LimitExceeded` past
        the case's cost budget. A missing cost is computed from the run's price table when the model is in it."""
        cost = usage.cost
        if cost is None:
            price = self._prices.price(usage.model) if (self._prices is not None and usage.model) else None
            cost = 0.0 if price is None else float(price.cost(usage.input_tokens, usage.output_tokens))
        self.episode.report_usage(
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost=cost, model=usage.model,
            time_to_first_token_s=usage.time_to_first_token_s, latency_s=usage.latency_s,
        )

    async def hold(self, client: ClientWatch) -> None:
        """Withhold an answer: wait until the client gives up or the trial ends."""
        gone = asyncio.ensure_future(client.wait())
        ended = asyncio.ensure_future(self.ended.wait())
        try:
            await asyncio.wait({gone, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (gone, ended):
                task.cancel()


__all__ = ["FAST_TOOL_TIMEOUT_S", "TOOL_TIMEOUT_ENV", "CallAnswer", "PriceLookup", "TrialEndpoint", "tool_timeout"]
