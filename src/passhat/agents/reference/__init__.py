"""Built-in reference agents: deterministic, rule-based, no LLM.

They exist to prove the harness measures what it claims: ``careful`` passes every built-in case,
``hasty`` fails the fault and permission cases for the right reasons, ``flaky`` is careful but lapses
on a seeded fraction of trials (so pass^k falls with k), and ``noop`` does nothing (so no case passes
by default). Each built-in domain has a playbook module here; playbooks read only what a real agent
would: the instruction, the conversation, the policy and tool results.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Literal, get_args

from passhat.episode import Episode

Style = Literal["careful", "hasty", "flaky"]
REFERENCE_AGENTS = ("careful", "hasty", "flaky", "noop")


async def noop(episode: Episode) -> str | None:
    """Does nothing and says nothing."""
    return None


def reference_agent(name: str) -> Callable[[Episode], Awaitable[str | None]]:
    """The reference agent called ``name``."""
    if name == "noop":
        return noop
    if name not in get_args(Style):
        raise ValueError(f"unknown reference agent {name!r}; choose from {', '.join(REFERENCE_AGENTS)}")

    async def agent(episode: Episode) -> str | None:
        try:
            playbook = importlib.import_module(f"passhat.agents.reference.{episode.domain}")
        except ModuleNotFoundError:
            raise RuntimeError(
                f"reference agent {name!r} has no playbook for domain {episode.domain!r}; "
                "reference agents only know the built-in domains"
            ) from None
        result: str | None = await playbook.play(episode, name)
        return result

    agent.__name__ = name
    return agent
