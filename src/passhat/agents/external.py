"""Agents that run outside the passhat process: the common part.

Each trial opens its endpoint on the run's tool server, starts the agent (a POST to a service, a
command, an isolated Python process) with the trial's start message, and waits for its reply — or for a
budget to run out, which stops the agent at once (it cannot receive ``LimitExceeded`` as an in-process
agent does). The time limit is the runner's: it cancels the wait, and subclasses stop their agent in
``finally`` blocks (kill the process group, drop the connection).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from passhat.episode import Episode
from passhat.serve import AgentReply, ToolServer, TrialEndpoint
from passhat.serve.endpoint import PriceLookup, tool_timeout
from passhat.serve.model_relay import ModelRelay


class ExternalAgent:
    """Base class: subclasses implement :meth:`run` (start the agent, return its reply)."""

    kind = "external"

    def __init__(self, *, server: ToolServer | None = None, prices: PriceLookup | None = None,
                 relay: ModelRelay | None = None) -> None:
        tool_timeout(1.0)  # a bad $PASSHAT_TOOL_TIMEOUT_S is bad input now, not an error in every trial
        self.server = server or ToolServer(prices=prices, relay=relay)

    async def run(self, endpoint: TrialEndpoint) -> AgentReply:
        raise NotImplementedError

    async def __call__(self, episode: Episode) -> str | None:
        async with self.server.trial(episode) as endpoint:
            agent = asyncio.ensure_future(self.run(endpoint))
            limit = asyncio.ensure_future(episode.stop_requested.wait())
            try:
                await asyncio.wait({agent, limit}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (agent, limit):
                    if not task.done():
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task  # the agent is stopped before the trial is graded
            if not agent.done() or agent.cancelled():
                if episode.limit is not None:
                    raise episode.limit
                return None  # a tool ended the episode (a hand-off): what the agent would have said is moot
            answer = agent.result()
            if answer.usage is not None and not episode.model_calls:
                endpoint.report_usage(answer.usage)  # a trial total, when nothing was reported per call
            return answer.reply

    async def aclose(self) -> None:
        """Stop the tool server at the end of the run (the runner calls this)."""
        await self.server.close()

    def describe(self) -> dict[str, Any]:
        """What the manifest records about this agent."""
        return {"kind": self.kind}


__all__ = ["ExternalAgent"]
