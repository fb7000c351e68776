"""``RunOptions``: how a run is made, as one typed object shared by every way of starting one.

``passhat.evaluate()`` and ``evaluate_async()`` take it (or its fields as keyword arguments), ``passhat run``
builds it from its options (commands/run_options.py), a Ray worker rebuilds the agent, user and judge from it
(api/executors.py), and the manifest records it as it is (``manifest.json``'s ``options``), so ``--resume``
continues a run with the options it started with (:func:`continue_options`). A field's docstring is its
reference documentation: docs/python-api.md's table is generated from it.

What it holds is what decides the measurement and how the trials are carried out. Where the run goes
(``out``, ``resume``) and what watches it (``progress``, ``on_warning``) are arguments of ``evaluate``, not
options: they are not the run's, and they are not written down.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.agents.bounds import DEFAULT_FILE_SIZE, DEFAULT_MEMORY, DEFAULT_PROCESSES
from passhat.errors import PasshatError
from passhat.llm.ratelimit import RateLimit

SESSION_FIELDS = frozenset({"concurrency", "executor", "workers", "ray_address", "retries", "retry_delay", "rate_limits", "by"})
"""Options that may differ when a run is resumed: how its trials are carried out (how many at once, where,
how model calls are retried and paced) and how its summary is broken down, never what is measured."""
CHECKED_ON_RESUME_ELSEWHERE = frozenset({"gate"})
"""Options a resumed run takes as given because another check compares them with more to say: the gate
file against its registration (its bytes' hash, not only its path: passhat.gate.registration)."""


class RunOptions(BaseModel):
    """How a run is made: trials, the cases chosen, the models and their endpoints, what is redacted, the
    agent's sandbox, where the trials execute. Immutable; unknown names are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)

    trials: int = Field(4, ge=1)
    """Trials per case (``-k``)."""
    concurrency: int = Field(4, ge=1)
    """Trials in flight at once (``-j``); agents waiting on a model cost nothing."""
    seed: int = Field(0, ge=0)
    """The run seed; every trial's seed derives from it and the case id."""
    cases: tuple[str, ...] = ()
    """Run only these case ids (``--case``)."""
    splits: tuple[str, ...] = ()
    """Run only the cases of these splits (``--split``: ``dev``, ``holdout``, ``regression``)."""
    tags: tuple[str, ...] = ()
    """Run only cases with these tag values, ``KEY=VALUE`` (``--tag``; every key must match)."""
    frozen: Path | None = None
    """Refuse to run unless the suite equals this snapshot (``passhat suite freeze``)."""
    record: Path | None = None
    """Call external tools for real and store them in this cassette folder."""
    replay: Path | None = None
    """Answer external tools from this cassette folder."""
    gate: Path | None = None
    """A gate file, registered in the manifest before the first trial and evaluated at the end."""
    sequential: tuple[int, ...] | None = None
    """Looks of a sequential run (``--sequential --looks``; a :class:`~passhat.Sequential` is accepted): trials per
    case at which the gate is evaluated, α spent across them, and the run stops once the gate is decided; needs
    ``gate``, and ``trials`` is then the last look (docs/gates.md)."""
    baseline: Path | None = None
    """The baseline run the gate's ``no_new_failures`` and ``non_inferior`` compare with (``--baseline``); a
    sequential run compares with it at every look."""
    by: tuple[str, ...] = ()
    """Tags to break every figure down by (every tag key is in ``summary.json`` anyway)."""
    sanity: bool = True
    """Run the do-nothing-agent check of the suite before the trials."""
    redact: bool = True
    """Redact e-mail, phone and card numbers before anything reaches disk."""
    redact_fields: tuple[str, ...] = ()
    """Also redact every value under these keys."""
    redact_patterns: dict[str, str] = Field(default_factory=dict)
    """Also redact matches of these regular expressions (name → expression)."""
    isolate: Literal["none", "process"] = "none"
    """``process``: a Python agent runs in a process of its own per trial, in the agents' sandbox."""
    name: str | None = None
    """How the manifest names a Python agent (default ``module:qualname``)."""
    user: str = "scripted"
    """The user simulator: ``scripted``, or ``openai:MODEL`` / ``anthropic:MODEL``."""
    judge: str | None = None
    """The judge model for cases with a ``judge:`` section."""
    base_url: str | None = None
    """Endpoint of an ``openai:``/``anthropic:`` agent (any OpenAI-compatible server)."""
    temperature: float | None = None
    """The agent model's sampling temperature (``None``: the provider's default)."""
    max_tokens: int | None = Field(None, ge=1)
    """The agent model's output-token cap per call."""
    prices: Path | None = None
    """A YAML/JSON price table extending the built-in one (USD per million tokens)."""
    user_base_url: str | None = None
    """Endpoint of the user model (default: ``base_url``)."""
    judge_base_url: str | None = None
    """Endpoint of the judge model (default: ``base_url``)."""
    retries: int = Field(6, ge=1)
    """Attempts per model call on 429/5xx before the trial is an infrastructure error."""
    retry_delay: float = Field(1.0, ge=0)
    """First backoff delay in seconds (doubles per retry)."""
    executor: Literal["local", "processes", "ray"] = "local"
    """Where the trials run: asyncio workers in this process, worker processes forked on this machine (one per
    CPU: for runs whose trials' own CPU fills a core), or a Ray cluster's workers."""
    workers: int | None = Field(None, ge=1, le=256)
    """With ``executor="processes"``: how many worker processes (default: one per CPU this process may use)."""
    ray_address: str | None = None
    """With ``executor="ray"``: the cluster to join (default: one started here)."""
    rate_limits: dict[str, RateLimit] = Field(default_factory=dict)
    """Model name → requests (and tokens) per minute, shared by every trial: ``"500"``, ``"500/30000"``, a
    number of requests per minute, or a :class:`~passhat.llm.ratelimit.RateLimit`."""
    agent_env: tuple[str, ...] = ()
    """Environment variables a ``cmd:`` or isolated agent gets (nothing else of this process's environment)."""
    agent_allow_hosts: tuple[str, ...] = ()
    """``HOST[:PORT]`` a ``cmd:`` or isolated agent may connect to besides its trial's tools."""
    agent_processes: int | str | None = DEFAULT_PROCESSES
    """Processes and threads such an agent's program may have at once (``None``: unbounded)."""
    agent_memory: int | str | None = DEFAULT_MEMORY
    """Memory it may use: bytes or a size such as ``"512M"`` (``None``: unbounded)."""
    agent_file_size: int | str | None = DEFAULT_FILE_SIZE
    """The size any one file it writes may reach (``None``: unbounded)."""
    agent_model_relay: tuple[str, ...] = ()
    """``NAME=URL`` of providers the agent calls through its own SDK, relayed per trial so that a provider that
    stalls is an outage, not the agent's time limit (a mapping name → URL is accepted too)."""

    @field_validator("rate_limits", mode="before")
    @classmethod
    def _limits(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        return {model: limit if isinstance(limit, Mapping) else RateLimit.parse(model, limit)
                for model, limit in value.items()}

    @field_validator("sequential", mode="before")
    @classmethod
    def _looks(cls, value: Any) -> Any:
        if not hasattr(value, "looks"):
            return value
        from passhat.sequential.design import Sequential  # a passhat.Sequential: its looks, and the run's spending

        shipped = Sequential(tuple(value.looks))
        if (value.spending, value.gamma, value.spend_at) != (shipped.spending, shipped.gamma, shipped.spend_at):
            raise ValueError(f"a run spends α {shipped.spending}-type at {shipped.spend_at.replace('_', ' ')} (design "
                             f"notes 027, 033); spending={value.spending!r}, gamma={value.gamma!r}, "
                             f"spend_at={value.spend_at!r} are for simulations")
        return tuple(value.looks)

    @field_validator("agent_model_relay", mode="before")
    @classmethod
    def _relay(cls, value: Any) -> Any:
        return tuple(f"{k}={v}" for k, v in value.items()) if isinstance(value, Mapping) else value

    @field_validator("agent_processes", "agent_memory", "agent_file_size", mode="before")
    @classmethod
    def _bound(cls, value: Any) -> Any:
        """One spelling per bound, so the command's ``--agent-processes 256`` and ``agent_processes=256`` are the
        same option (checked in full by :meth:`passhat.agents.bounds.AgentBounds.parse`)."""
        if isinstance(value, str) and value.strip().lower() == "none":
            return None
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        return value

    @field_validator("cases", "splits", "tags", "by", "redact_fields", "agent_env", "agent_allow_hosts", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        if isinstance(value, str):  # cases="a" would otherwise be the cases "a" one letter at a time
            raise ValueError("expected a list of strings, not one string")
        return value

    @classmethod
    def build(cls, base: RunOptions | None = None, **fields: Any) -> RunOptions:
        """``base`` (or the defaults) with ``fields`` set; a :class:`PasshatError` naming each bad or unknown
        field, with the nearest valid name for a misspelt one. The fields set are those of ``base`` plus
        ``fields``: :func:`continue_options` treats them as what the caller asked for."""
        values = {**(base.model_dump(include=base.model_fields_set) if base is not None else {}), **fields}
        try:
            return cls(**values)
        except ValidationError as exc:
            raise PasshatError(describe_errors(exc)) from None

    def resolved(self) -> RunOptions:
        """The same options with every file and folder made absolute, as the manifest records them: a run
        resumed from another working directory finds them again."""
        paths = {f: getattr(self, f).resolve() for f in _PATH_FIELDS if getattr(self, f) is not None}
        return self.model_copy(update=paths) if paths else self

    def to_manifest(self) -> dict[str, Any]:
        """The options as ``manifest.json`` records them: every field, paths as text."""
        return self.model_dump(mode="json")


_PATH_FIELDS = tuple(name for name, f in RunOptions.model_fields.items() if f.annotation == Path | None)


def describe_errors(exc: ValidationError) -> str:
    """One line per bad option: ``run option 'trails': unknown; did you mean 'trials'?``."""
    known = list(RunOptions.model_fields)
    lines = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "options"
        if error["type"] == "extra_forbidden":
            near = difflib.get_close_matches(str(error["loc"][0]), known, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f"; options are: {', '.join(known)}"
            lines.append(f"run option {where!r}: unknown{hint}")
        else:
            lines.append(f"run option {where!r}: {error['msg']} (got {error.get('input')!r})")
    return "; ".join(lines)


def continue_options(stored: Mapping[str, Any] | None, given: RunOptions, folder: Path) -> RunOptions:
    """The options a resumed run goes on with: those it was started with (``manifest.json``'s ``options``),
    except the session fields (:data:`SESSION_FIELDS`) the caller set. A measured option the caller set to
    another value is refused, naming both values: continuing with it would mix two measurements in one run.
    A manifest written before options were recorded has none: the caller's options are used as given (and
    the runner still checks agent, trials, seed, models and isolation against it)."""
    if stored is None:
        return given
    try:
        started = RunOptions.model_validate(stored)
    except ValidationError as exc:
        raise PasshatError(f"{folder / 'manifest.json'}: its options cannot be read ({describe_errors(exc)}); "
                           "it was written by another passhat version: resume it with that version") from None
    passed_on = SESSION_FIELDS | CHECKED_ON_RESUME_ELSEWHERE
    changed = {f: getattr(given, f) for f in given.model_fields_set - passed_on if getattr(given, f) != getattr(started, f)}
    if changed:
        said = ", ".join(f"{f}={getattr(started, f)!r} (now {v!r})" for f, v in changed.items())
        raise PasshatError(f"cannot resume {folder}: it was started with {said}; leave "
                           f"{'that option' if len(changed) == 1 else 'those options'} out to continue it as it "
                           "started, or start a new run")
    return started.model_copy(update={f: getattr(given, f) for f in given.model_fields_set & passed_on})


OPTIONS_BEGIN = "<!-- options: generated by passhat.api.options.options_reference; do not edit -->"
OPTIONS_END = "<!-- end of options -->"


def options_reference() -> str:
    """The Markdown table of every run option, embedded in docs/python-api.md (a test keeps them equal)."""
    from passhat.docgen import field_table

    session = ", ".join(f"`{name}`" for name in RunOptions.model_fields if name in SESSION_FIELDS)
    lines = [OPTIONS_BEGIN, "", *field_table(RunOptions), "",
             f"A resumed run may change only {session}; the others are the run's and stay as it started.", "",
             OPTIONS_END]
    return "\n".join(lines) + "\n"
