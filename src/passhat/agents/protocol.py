"""What an agent is: anything callable as ``await agent(episode)``."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from passhat.episode import Episode


@runtime_checkable
class Agent(Protocol):
    """An async callable that does the task through the episode; may return its final reply."""

    async def __call__(self, episode: Episode) -> str | None: ...
