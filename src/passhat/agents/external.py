"""Agents that run outside the passhat process: the common part.

Each trial opens its endpoint on the run's tool server, starts the agent (a POST to a service, a
command, an isolated Python process) with the trial's start message, and waits for its reply — or for a
budget to run out, which stops the agent at once (it cannot receive ``LimitExceeded`` as an in-process
agent does). The time limit is the runner's: it cancels the wait, and subclasses stop their agent in
``finally`` blocks (kill the process group, drop the connection).
"""

from __future__ import annotations

import asyncio
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
            # the agent runs in this task (no task of its own: its start and its end cost no loop turns); a budget
            # that runs out cancels this task, and that cancellation is taken back here (_BudgetStop)
            task = asyncio.current_task()
            if task is None:
                raise RuntimeError("an external agent is run from an asyncio task")
            stop = _BudgetStop(task)
            watcher = asyncio.ensure_future(stop.watch(episode.stop_requested))
            answer: AgentReply | None = None
            try:
                answer = await self.run(endpoint)
            except asyncio.CancelledError:
                if not stop.end():  # not (only) ours: the time limit's or the run's
                    raise
            finally:
                stop.end()
                watcher.cancel()
            if answer is None:
                if episode.limit is not None:
                    raise episode.limit
                return None  # a tool ended the episode (a hand-off): what the agent would have said is moot
            if answer.usage is not None and not episode.model_calls:
                endpoint.report_usage(answer.usage)  # a trial total, when nothing was reported per call
            return answer.reply

    async def aclose(self) -> None:
        """Stop the tool server at the end of the run (the runner calls this)."""
        await self.server.close()

    def describe(self) -> dict[str, Any]:
        """What the manifest records about this agent."""
        return {"kind": self.kind}


class _BudgetStop:
    """Cancels the trial's task when the episode asks to stop (a budget ran out, a tool ended the episode) while
    the agent runs in it, and takes that cancellation back when the agent has ended."""

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.baseline = task.cancelling()
        self.active = True
        self.fired = False

    async def watch(self, event: asyncio.Event) -> None:
        await event.wait()
        if self.active and not self.fired:
            self.fired = True
            self.task.cancel()

    def end(self) -> bool:
        """Fire no more; ``True`` when the only cancellation asked for meanwhile was ours (taken back now)."""
        self.active = False
        if self.fired:
            self.fired = False
            self.task.uncancel()
            return self.task.cancelling() <= self.baseline
        return False


__all__ = ["ExternalAgent"]
