"""From a run's options to its roles: the agent, the user simulator and the judge.

One function builds them for the driver and for every Ray worker (api/executors.py), from the same
:class:`~passhat.api.options.RunOptions`, so the manifest records exactly what was configured (model,
endpoint, temperature, seed policy, prompt hash, prices) and every worker runs what it records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from passhat.agents.bounds import AgentBounds
from passhat.agents.model import AgentSettings
from passhat.agents.protocol import Agent
from passhat.api.options import RunOptions
from passhat.errors import PasshatError
from passhat.llm.chat import is_model_spec
from passhat.llm.pricing import PriceTable, load_price_table
from passhat.llm.ratelimit import LimiterFactory, RateLimit, local_limiter
from passhat.llm.retry import RetryPolicy
from passhat.models import ModelInfo


@dataclass
class ModelSetup:
    """The run's agent plus optional model-played user and judge, and what the manifest records."""

    agent: Agent
    user: Any = None
    judge: Any = None
    manifest: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _unpriced(role: str, described: dict[str, Any] | None) -> list[str]:
    """A warning for a model the manifest records without a price (``described`` is its ``models`` entry)."""
    info = None if described is None else ModelInfo.model_validate(described)
    if info is None or info.price is not None:
        return []
    return [f"no price for {role} model {info.model!r}: its cost is recorded as 0 (add it with --prices FILE)"]


def build_model_setup(label: str, options: RunOptions, *, agent: Any = None,
                      limiters: LimiterFactory = local_limiter) -> ModelSetup:
    """The roles ``options`` describe; raises PasshatError naming the option at fault. ``agent``, when given,
    is the agent itself (a Python object from the library API) and ``label`` only its name; otherwise
    ``label`` is the agent's spec. Each rate-limited model gets one limiter from ``limiters`` (on Ray, one
    asking the run's actor), shared by every role calling that model. The agent's sandbox and bounds
    (``agent_env``, ``agent_allow_hosts``, ``agent_processes``…) apply to ``cmd:`` and isolated agents
    (:class:`passhat.agents.bounds.AgentBounds`; docs/agents.md); ``agent_model_relay`` relays the providers
    an agent calls through its own SDK, so that their stalls are outages (:mod:`passhat.serve.model_relay`)."""
    from passhat.agents import load_agent, with_model_relay

    o = options

    table: PriceTable = load_price_table(o.prices)
    retry = RetryPolicy(attempts=o.retries, base_delay_s=o.retry_delay, max_delay_s=max(o.retry_delay, 30.0))
    bounds = AgentBounds.parse(o.agent_processes, o.agent_memory, o.agent_file_size)  # bad input whatever the agent
    models: dict[str, Any] = {}
    runtime: dict[str, Any] | None = None
    relay = model_relay(o.agent_model_relay)
    if agent is not None:
        if o.base_url or o.temperature is not None or o.max_tokens is not None:
            raise PasshatError("base_url, temperature and max_tokens apply to openai:MODEL / anthropic:MODEL agents")
        if relay is not None:
            agent = with_model_relay(agent, relay)
    elif is_model_spec(label):
        if o.isolate != "none":
            raise PasshatError("--isolate process applies to Python agents, not to openai:/anthropic: agents")
        if relay is not None:
            raise PasshatError(f"--agent-model-relay is for agents that call their provider themselves; {label} is "
                               "passhat's own model client, which watches its calls already (give it --base-url)")
        settings = AgentSettings(temperature=o.temperature, max_tokens=o.max_tokens)
        from passhat.agents.model import model_agent

        agent = model_agent(label, base_url=o.base_url, settings=settings, retry=retry, prices=table)
        models["agent"] = agent.describe()
    else:
        if o.base_url or o.temperature is not None or o.max_tokens is not None:
            raise PasshatError("--base-url, --temperature and --max-tokens apply to openai:MODEL / anthropic:MODEL agents")
        from passhat.agents.confined import AgentSandbox

        sandbox = AgentSandbox(env=o.agent_env, allow_hosts=o.agent_allow_hosts, bounds=bounds)
        agent = load_agent(label, isolate=o.isolate, prices=table, sandbox=sandbox, relay=relay)  # type: ignore[arg-type]
        describe = getattr(agent, "describe", None)
        if callable(describe):  # a service, a command or an isolated process: how it was run
            runtime = describe()
    user = None
    if o.user != "scripted":
        if not is_model_spec(o.user):
            raise PasshatError(f"--user {o.user!r}: expected scripted, openai:MODEL or anthropic:MODEL")
        from passhat.users.llm import llm_user

        user = llm_user(o.user, base_url=o.user_base_url or o.base_url, prices=table, retry=retry)
        models["user"] = user.describe()
    judge = None
    if o.judge:
        if not is_model_spec(o.judge):
            raise PasshatError(f"--judge {o.judge!r}: expected openai:MODEL or anthropic:MODEL")
        from passhat.graders.judge import Judge
        from passhat.llm import chat_model

        judge = Judge(chat_model(o.judge, base_url=o.judge_base_url or o.base_url, retry=retry), prices=table)
        models["judge"] = judge.describe()
    warnings = [w for role in ("agent", "user", "judge") for w in _unpriced(role, models.get(role))]
    manifest: dict[str, Any] = {"models": models} if models else {}
    if o.rate_limits:
        attach_rate_limits(o.rate_limits, limiters, [getattr(role, "model", None) for role in (agent, user, judge)])
        manifest["rate_limits"] = {model: limit.describe() for model, limit in o.rate_limits.items()}
    if runtime is not None:
        manifest["agent_runtime"] = runtime
    if relay is not None:
        manifest["model_relay"] = relay.describe()
    return ModelSetup(agent, user, judge, manifest, warnings)


def model_relay(upstreams: Sequence[str] | Mapping[str, str]) -> Any:
    """The run's :class:`~passhat.serve.model_relay.ModelRelay` for ``NAME=URL`` items (``None`` without any)."""
    from passhat.serve.model_upstreams import parse_model_upstreams

    parsed = parse_model_upstreams(upstreams)
    if not parsed:
        return None
    from passhat.serve.model_relay import ModelRelay

    return ModelRelay(parsed)


def attach_rate_limits(rate_limits: dict[str, RateLimit], limiters: LimiterFactory, chats: list[Any]) -> None:
    """Give each limited model one limiter, shared by the roles that call it (matched by ``MODEL`` or
    ``PROVIDER:MODEL``); a limit naming no model of the run is a typo that would silently limit nothing."""
    from passhat.llm.sdk_base import SdkChat

    called = [c for c in chats if isinstance(c, SdkChat)]
    for name, limit in rate_limits.items():
        users = [c for c in called if name in (c.model, f"{c.provider}:{c.model}")]
        if not users:
            models = ", ".join(sorted({f"{c.provider}:{c.model}" for c in called})) or "none (no openai:/anthropic: role)"
            raise PasshatError(f"--rate-limit {name}: no model of this run is called {name!r} (its models: {models})")
        limiter = limiters(name, limit)
        for chat in users:
            chat.limiter = limiter
