"""Agents: the protocol, built-in reference agents and adapters."""

from collections.abc import Awaitable, Callable
from typing import Any

from passhat.agents.protocol import Agent
from passhat.agents.python import SyncEpisode, python_agent
from passhat.agents.reference import REFERENCE_AGENTS, reference_agent
from passhat.episode import Episode
from passhat.errors import PasshatError


def check_agent_spec(spec: str) -> None:
    """Fail fast on a bare name that is not a built-in agent (other forms report their own errors on load)."""
    if ":" not in spec and spec not in REFERENCE_AGENTS:
        raise PasshatError(f"--agent {spec!r}: not a built-in agent ({', '.join(sorted(REFERENCE_AGENTS))}); "
                           "for your own agent give module:function or path/to/file.py:function, "
                           "for a model openai:MODEL or anthropic:MODEL")


def load_agent(spec: str, **model_options: Any) -> Callable[[Episode], Awaitable[str | None]]:
    """Resolve ``careful``/``hasty``/``flaky``/``noop``, ``openai:MODEL`` / ``anthropic:MODEL`` (a model-driven
    agent; ``model_options`` go to :func:`passhat.agents.llm.model_agent`), or ``module:function``."""
    if spec in REFERENCE_AGENTS:
        return reference_agent(spec)
    if spec.partition(":")[0] in ("openai", "anthropic"):
        from passhat.agents.llm import model_agent

        return model_agent(spec, **model_options)
    check_agent_spec(spec)
    return python_agent(spec)


__all__ = ["REFERENCE_AGENTS", "Agent", "SyncEpisode", "check_agent_spec", "load_agent", "python_agent", "reference_agent"]
