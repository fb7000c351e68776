"""Agents: the protocol, built-in reference agents and adapters.

In-process: ``careful``/``hasty``/``flaky``/``noop``, ``openai:MODEL`` / ``anthropic:MODEL`` and
``module:function``. Elsewhere, through the trial's tool server (:mod:`passhat.serve`): an HTTP service
(``http://HOST:PORT/PATH``), a command (``cmd:"COMMAND ARGS"``), or any Python agent in a process of
its own (``isolate="process"``).
"""

from typing import Any, Literal

from passhat.agents.protocol import Agent
from passhat.agents.python import SyncEpisode, python_agent
from passhat.agents.reference import REFERENCE_AGENTS, reference_agent
from passhat.errors import PasshatError

Isolation = Literal["none", "process"]


def _is_external(spec: str) -> bool:
    return spec.startswith(("http://", "https://", "cmd:"))


def is_python_spec(spec: str) -> bool:
    """``module:function`` or ``path.py:function``: an agent passhat imports (not built-in, model or external)."""
    return not (_is_external(spec) or spec in REFERENCE_AGENTS or spec.partition(":")[0] in ("openai", "anthropic"))


def check_agent_spec(spec: str, isolate: Isolation = "none") -> None:
    """Fail fast on an agent spec that cannot work (other forms report their own errors on load)."""
    if isolate == "process" and (_is_external(spec) or spec.partition(":")[0] in ("openai", "anthropic")):
        raise PasshatError(f"--isolate process applies to Python agents (module:function, path.py:function or a "
                           f"built-in agent), not to {spec!r}, which already runs as it runs")
    if ":" not in spec and spec not in REFERENCE_AGENTS:
        raise PasshatError(f"--agent {spec!r}: not a built-in agent ({', '.join(sorted(REFERENCE_AGENTS))}); "
                           "for your own agent give module:function or path/to/file.py:function, "
                           "a service http://HOST:PORT/PATH, a program cmd:\"COMMAND ARGS\", "
                           "for a model openai:MODEL or anthropic:MODEL")


def load_agent(spec: str, *, isolate: Isolation = "none", prices: Any = None, sandbox: Any = None,
               relay: Any = None, **model_options: Any) -> Agent:
    """Resolve an agent spec (see module docstring). ``model_options`` go to
    :func:`passhat.llm.model_agent`; ``prices`` price the usage external agents report; ``sandbox``
    (an :class:`passhat.agents.confined.AgentSandbox`) is what ``cmd:`` and isolated agents may have beyond
    their trial (environment variables, hosts); ``relay`` (a :class:`passhat.serve.model_relay.ModelRelay`)
    watches the model calls the agent makes itself (an in-process agent is wrapped in
    :class:`passhat.agents.relayed.RelayedAgent` for it)."""
    check_agent_spec(spec, isolate)
    if spec.startswith(("http://", "https://")):
        from passhat.agents.service import ServiceAgent

        return ServiceAgent(spec, prices=prices, relay=relay)
    if spec.startswith("cmd:"):
        from passhat.agents.command import CommandAgent, parse_command

        return CommandAgent(parse_command(spec), prices=prices, sandbox=sandbox, relay=relay)
    if isolate == "process":
        from passhat.agents.isolated import isolated_agent

        return isolated_agent(spec, prices=prices, sandbox=sandbox, relay=relay)
    if spec.partition(":")[0] in ("openai", "anthropic"):
        from passhat.agents.model import model_agent

        if relay is not None:
            raise PasshatError(f"--agent-model-relay is for agents that call their provider themselves; {spec} is "
                               "passhat's own model client, which watches its calls already (give --base-url)")
        return model_agent(spec, **model_options)
    agent = reference_agent(spec) if spec in REFERENCE_AGENTS else python_agent(spec)
    return agent if relay is None else with_model_relay(agent, relay)


def with_model_relay(agent: Agent, relay: Any) -> Agent:
    """An in-process agent whose trials get the model relay's URLs (``episode.model_urls``)."""
    from passhat.agents.relayed import RelayedAgent

    return RelayedAgent(agent, relay)


__all__ = ["REFERENCE_AGENTS", "Agent", "Isolation", "SyncEpisode", "check_agent_spec", "is_python_spec", "load_agent",
           "python_agent", "reference_agent", "with_model_relay"]
