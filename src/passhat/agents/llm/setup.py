"""From command-line options to the run's model roles: agent, user simulator, judge.

Kept here so ``passhat run`` gains the model options with one decorator, and so the manifest records
exactly what was configured (model, endpoint, temperature, seed policy, prompt hash, prices).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from passhat.agents.bounds import DEFAULT_FILE_SIZE, DEFAULT_MEMORY, DEFAULT_PROCESSES, AgentBounds
from passhat.agents.llm.chat import is_model_spec
from passhat.agents.llm.loop import AgentSettings
from passhat.agents.llm.pricing import PriceTable, load_price_table
from passhat.agents.llm.ratelimit import LimiterFactory, RateLimit, local_limiter
from passhat.agents.llm.retry import RetryPolicy
from passhat.errors import PasshatError


def model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the model options to a click command (they arrive as keyword arguments)."""
    options = [
        click.option("--base-url", default=None, help="Endpoint of an openai:/anthropic: agent (OpenAI-compatible server)."),
        click.option("--temperature", type=float, default=None, help="Agent sampling temperature (default: the provider's)."),
        click.option("--max-tokens", type=click.IntRange(1), default=None, help="Agent output-token cap per model call."),
        click.option("--prices", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
                     help="YAML/JSON price table extending the built-in one (USD per million tokens)."),
        click.option("--user", "user_spec", default="scripted", show_default=True,
                     help="User simulator: scripted, or openai:MODEL / anthropic:MODEL."),
        click.option("--user-base-url", default=None, help="Endpoint of the user model (default: --base-url)."),
        click.option("--judge", "judge_spec", default=None, help="Judge model for cases with a judge: section."),
        click.option("--judge-base-url", default=None, help="Endpoint of the judge model (default: --base-url)."),
        click.option("--retries", type=click.IntRange(1), default=6, show_default=True,
                     help="Attempts per model call on 429/5xx before the trial is an infrastructure error."),
        click.option("--retry-delay", type=click.FloatRange(0), default=1.0, show_default=True,
                     help="First backoff delay in seconds (doubles per retry)."),
        click.option("--rate-limit", "rate_limits", multiple=True, metavar="MODEL=RPM[/TPM]",
                     help="Requests (and tokens) per minute for a model, shared by every trial of the run, on Ray by "
                          "every worker; halved on a 429, recovering gradually (repeatable; e.g. gpt-4o=500/30000)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@dataclass
class ModelSetup:
    """The run's agent plus optional model-played user and judge, and what the manifest records."""

    agent: Callable[[Any], Awaitable[str | None]]
    user: Any = None
    judge: Any = None
    manifest: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _unpriced(role: str, described: dict[str, Any] | None) -> list[str]:
    if described is None or described.get("price") is not None:
        return []
    return [f"no price for {role} model {described['model']!r}: its cost is recorded as 0 (add it with --prices FILE)"]


def build_model_setup(
    agent_spec: str, *, base_url: str | None = None, temperature: float | None = None, max_tokens: int | None = None,
    prices: Path | None = None, user_spec: str = "scripted", user_base_url: str | None = None,
    judge_spec: str | None = None, judge_base_url: str | None = None, retries: int = 6, retry_delay: float = 1.0,
    isolate: str = "none", agent: Any = None, rate_limits: dict[str, RateLimit] | None = None,
    limiters: LimiterFactory = local_limiter, agent_env: Sequence[str] = (), agent_allow_hosts: Sequence[str] = (),
    agent_processes: int | str | None = DEFAULT_PROCESSES, agent_memory: int | str | None = DEFAULT_MEMORY,
    agent_file_size: int | str | None = DEFAULT_FILE_SIZE,
    agent_model_relay: Sequence[str] | Mapping[str, str] = (),
) -> ModelSetup:
    """Resolve the options; raises PasshatError naming the option at fault. ``agent``, when given, is the
    agent itself (a Python object from the library API) and ``agent_spec`` only its name. ``rate_limits``
    (model name → limit) get one limiter each from ``limiters``, shared by every role calling that model.
    ``agent_env``/``agent_allow_hosts``: what a ``cmd:`` or isolated agent's sandbox lets through, and
    ``agent_processes``/``agent_memory``/``agent_file_size`` how much of the machine its program may take
    (:class:`passhat.agents.bounds.AgentBounds`; docs/agents.md).
    ``agent_model_relay``: ``NAME=URL`` (or name → URL) of the providers an agent calls through its own SDK, relayed
    so that their stalls are outages (:mod:`passhat.serve.model_relay`)."""
    from passhat.agents import load_agent, with_model_relay

    table: PriceTable = load_price_table(prices)
    retry = RetryPolicy(attempts=retries, base_delay_s=retry_delay, max_delay_s=max(retry_delay, 30.0))
    bounds = AgentBounds.parse(agent_processes, agent_memory, agent_file_size)  # bad input whatever the agent
    models: dict[str, Any] = {}
    runtime: dict[str, Any] | None = None
    relay = model_relay(agent_model_relay)
    if agent is not None:
        if base_url or temperature is not None or max_tokens is not None:
            raise PasshatError("base_url, temperature and max_tokens apply to openai:MODEL / anthropic:MODEL agents")
        if relay is not None:
            agent = with_model_relay(agent, relay)
    elif is_model_spec(agent_spec):
        if isolate != "none":
            raise PasshatError("--isolate process applies to Python agents, not to openai:/anthropic: agents")
        if relay is not None:
            raise PasshatError(f"--agent-model-relay is for agents that call their provider themselves; {agent_spec} is "
                               "passhat's own model client, which watches its calls already (give it --base-url)")
        settings = AgentSettings(temperature=temperature, max_tokens=max_tokens)
        from passhat.agents.llm import model_agent

        agent = model_agent(agent_spec, base_url=base_url, settings=settings, retry=retry, prices=table)
        models["agent"] = agent.describe()
    else:
        if base_url or temperature is not None or max_tokens is not None:
            raise PasshatError("--base-url, --temperature and --max-tokens apply to openai:MODEL / anthropic:MODEL agents")
        from passhat.agents.confined import AgentSandbox

        sandbox = AgentSandbox(env=tuple(agent_env), allow_hosts=tuple(agent_allow_hosts), bounds=bounds)
        agent = load_agent(agent_spec, isolate=isolate, prices=table, sandbox=sandbox, relay=relay)  # type: ignore[arg-type]
        describe = getattr(agent, "describe", None)
        if callable(describe):  # a service, a command or an isolated process: how it was run
            runtime = describe()
    user = None
    if user_spec != "scripted":
        if not is_model_spec(user_spec):
            raise PasshatError(f"--user {user_spec!r}: expected scripted, openai:MODEL or anthropic:MODEL")
        from passhat.users.llm import llm_user

        user = llm_user(user_spec, base_url=user_base_url or base_url, prices=table, retry=retry)
        models["user"] = user.describe()
    judge = None
    if judge_spec:
        if not is_model_spec(judge_spec):
            raise PasshatError(f"--judge {judge_spec!r}: expected openai:MODEL or anthropic:MODEL")
        from passhat.agents.llm import chat_model
        from passhat.graders.judge import Judge

        judge = Judge(chat_model(judge_spec, base_url=judge_base_url or base_url, retry=retry), prices=table)
        models["judge"] = judge.describe()
    warnings = [w for role in ("agent", "user", "judge") for w in _unpriced(role, models.get(role))]
    manifest: dict[str, Any] = {"models": models} if models else {}
    if rate_limits:
        attach_rate_limits(rate_limits, limiters, [getattr(role, "model", None) for role in (agent, user, judge)])
        manifest["rate_limits"] = {model: limit.describe() for model, limit in rate_limits.items()}
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
    from passhat.agents.llm.sdk_base import SdkChat

    called = [c for c in chats if isinstance(c, SdkChat)]
    for name, limit in rate_limits.items():
        users = [c for c in called if name in (c.model, f"{c.provider}:{c.model}")]
        if not users:
            models = ", ".join(sorted({f"{c.provider}:{c.model}" for c in called})) or "none (no openai:/anthropic: role)"
            raise PasshatError(f"--rate-limit {name}: no model of this run is called {name!r} (its models: {models})")
        limiter = limiters(name, limit)
        for chat in users:
            chat.limiter = limiter
