"""An in-process agent whose own model calls go through the run's model relay.

An agent function that builds its own SDK client (``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``, a
LangGraph or pydantic-ai model) cannot be given a base URL through the environment — the process is
shared by every trial — so it finds the relay's URLs for *its* trial on the episode
(``episode.model_urls["openai"]``). The relay lives on a tool server of the run's own (plain HTTP on
127.0.0.1, no MCP), which knows the trial by the path of every request; opening a trial there costs a dict
entry. A stall the relay sees is declared on the trial's watch and ends the trial as ``error``
(:mod:`passhat.serve.model_relay`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from passhat.episode import Episode
from passhat.serve import ToolServer
from passhat.serve.model_relay import ModelRelay


class RelayedAgent:
    """Runs ``agent`` with its trial's relay URLs on the episode."""

    def __init__(self, agent: Callable[[Episode], Awaitable[str | None]], relay: ModelRelay) -> None:
        self.agent = agent
        self.relay = relay
        self.server = ToolServer(mcp=False, relay=relay)

    async def __call__(self, episode: Episode) -> str | None:
        async with self.server.trial(episode) as endpoint:  # inside the agent's task: the trial's watch is current
            episode.model_urls = dict(endpoint.model_urls)
            return await self.agent(episode)

    async def aclose(self) -> None:
        """Stop the relay's server at the end of the run (the runner calls this), and the agent's own close."""
        await self.server.close()
        close = getattr(self.agent, "aclose", None)
        if close is not None:
            await close()

    def describe(self) -> dict[str, Any]:
        return {"kind": "in-process", "model_relay": self.relay.describe()}


__all__ = ["RelayedAgent"]
