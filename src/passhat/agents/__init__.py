"""Agents: the protocol, built-in reference agents and adapters."""

from collections.abc import Awaitable, Callable

from passhat.agents.protocol import Agent
from passhat.agents.python import SyncEpisode, python_agent
from passhat.agents.reference import REFERENCE_AGENTS, reference_agent
from passhat.episode import Episode


def load_agent(spec: str) -> Callable[[Episode], Awaitable[str | None]]:
    """Resolve ``careful``/``hasty``/``flaky``/``noop`` or ``module:function``."""
    if spec in REFERENCE_AGENTS:
        return reference_agent(spec)
    return python_agent(spec)


__all__ = ["REFERENCE_AGENTS", "Agent", "SyncEpisode", "load_agent", "python_agent", "reference_agent"]
