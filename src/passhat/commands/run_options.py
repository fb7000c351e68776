"""How ``passhat run``'s options become a :class:`~passhat.api.options.RunOptions`.

The command declares its options with click (names, short forms, help); :func:`run_options` turns those the
user typed into the run's options, and nothing else: an option left at its default is not "set", so
``--resume`` continues a run with the options it started with (:func:`passhat.api.options.continue_options`).
:data:`FIELD_OF` is the whole mapping; tests/cli/test_run_options.py checks that every field of
``RunOptions`` but :data:`API_ONLY` has an option and that the options' defaults are the fields' defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from passhat.api.options import RunOptions
from passhat.commands.common import FiniteFloat
from passhat.errors import PasshatError
from passhat.llm.ratelimit import parse_option

FIELD_OF: dict[str, str] = {
    "trials": "trials", "concurrency": "concurrency", "seed": "seed", "case_ids": "cases", "splits": "splits",
    "tags": "tags", "frozen": "frozen", "record": "record", "replay": "replay", "gate_file": "gate", "by": "by",
    "no_sanity": "sanity", "no_redact": "redact", "redact_field": "redact_fields", "redact_pattern": "redact_patterns",
    "isolate": "isolate", "user_spec": "user", "judge_spec": "judge", "base_url": "base_url",
    "temperature": "temperature", "max_tokens": "max_tokens", "prices": "prices", "user_base_url": "user_base_url",
    "judge_base_url": "judge_base_url", "retries": "retries", "retry_delay": "retry_delay", "executor": "executor",
    "workers": "workers", "ray_address": "ray_address", "rate_limits": "rate_limits", "agent_env": "agent_env",
    "agent_allow_hosts": "agent_allow_hosts", "agent_processes": "agent_processes", "agent_memory": "agent_memory",
    "agent_file_size": "agent_file_size", "agent_model_relay": "agent_model_relay", "baseline": "baseline",
}
"""``passhat run``'s parameter name → the :class:`RunOptions` field it sets."""

API_ONLY = frozenset({"name"})
"""Fields with no command-line option: ``name`` names a Python agent, and the command's agent is a spec."""
SEQUENTIAL_PARAMS = ("sequential", "looks", "max_trials")
"""``--sequential``, ``--looks`` and ``--max-trials``: together they set the ``sequential`` field (its looks),
through :func:`sequential_looks`."""

_CONVERT: dict[str, Callable[[Any], Any]] = {
    "no_sanity": lambda flag: not flag,
    "no_redact": lambda flag: not flag,
    "redact_pattern": lambda items: parse_redact_patterns(items),
    "rate_limits": lambda items: parse_option(items),
}


def run_options(ctx: click.Context, params: dict[str, Any]) -> RunOptions:
    """The :class:`RunOptions` of the options the user gave (not those left at their defaults); a
    :class:`PasshatError` for a malformed one."""
    given = {name: value for name, value in params.items() if ctx.get_parameter_source(name) is not ParameterSource.DEFAULT}
    return RunOptions.build(**as_fields(given))


def sequential_looks(ctx: click.Context, sequential: bool, looks: str | None, max_trials: int | None
                     ) -> tuple[int, ...] | None:
    """``--sequential [--looks …] [--max-trials N]`` as the looks of a sequential run, or None; misuse is a
    :class:`PasshatError` (``-k`` with ``--sequential``, ``--looks`` without it, looks that do not increase)."""
    if not sequential:
        if looks is not None or max_trials is not None:
            raise PasshatError("--looks and --max-trials belong to a sequential run: add --sequential")
        return None
    if ctx.get_parameter_source("trials") is not ParameterSource.DEFAULT:
        trials = ctx.params["trials"]  # not a run file: the command's parameters
        raise PasshatError(f"--trials {trials} and --sequential: a sequential run's trials per case are its looks "
                           "(--looks, --max-trials)")
    from passhat.sequential.design import Sequential  # the numerics only when asked for

    return Sequential.parse(looks, max_trials).looks


def as_fields(params: dict[str, Any]) -> dict[str, Any]:
    """``passhat run``'s parameters (by name) as :class:`RunOptions` fields (the others are left out)."""
    return {FIELD_OF[name]: _CONVERT.get(name, _same)(value) for name, value in params.items() if name in FIELD_OF}


def _same(value: Any) -> Any:
    return value


def parse_redact_patterns(items: tuple[str, ...]) -> dict[str, str]:
    """``--redact-pattern NAME=REGEX`` options as a mapping (the expressions are checked by evaluate)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, rx = item.partition("=")
        if not sep or not name or not rx:
            raise PasshatError(f"--redact-pattern {item!r}: expected NAME=REGEX")
        out[name] = rx
    return out


def model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the model options to a click command (they arrive as keyword arguments)."""
    options = [
        click.option("--base-url", default=None, help="Endpoint of an openai:/anthropic: agent (OpenAI-compatible server)."),
        click.option("--temperature", type=FiniteFloat(), default=None,
                     help="Agent sampling temperature (default: the provider's)."),
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
        click.option("--retry-delay", type=FiniteFloat(0), default=1.0, show_default=True,
                     help="First backoff delay in seconds (doubles per retry)."),
        click.option("--rate-limit", "rate_limits", multiple=True, metavar="MODEL=RPM[/TPM]",
                     help="Requests (and tokens) per minute for a model, shared by every trial of the run, on Ray by "
                          "every worker; halved on a 429, recovering gradually (repeatable; e.g. gpt-4o=500/30000)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command
