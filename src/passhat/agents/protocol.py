"""What an agent is: anything callable as ``await agent(episode)``.

The runner, the executors and every adapter type their agents as :class:`Agent`, so mypy checks that what a
user passes, what a spec loads and what an adapter wraps can be driven by the runner.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, runtime_checkable

from passhat.episode import Episode


@runtime_checkable
class Agent(Protocol):
    """A callable that does the task through the episode and may return its final reply: an ``async def``
    function of the episode, or an object whose ``__call__`` is one."""

    def __call__(self, episode: Episode, /) -> Awaitable[str | None]: ...
