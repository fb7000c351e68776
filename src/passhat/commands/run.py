"""``passhat run``: run a suite's cases k times with an agent, write the run folder, gate, report."""

from __future__ import annotations

import asyncio
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from passhat.agents import check_agent_spec
from passhat.agents.llm.setup import build_model_setup, model_options
from passhat.cases import load_suite
from passhat.commands.cases import suite_hint
from passhat.commands.common import err, fail
from passhat.commands.export import check_otlp_url
from passhat.commands.gate import finish_run, register_gate
from passhat.commands.report import after_run
from passhat.errors import PasshatError
from passhat.redaction import Redactor
from passhat.report.terminal import print_summary
from passhat.results import build_summary, tag_keys
from passhat.results.tally import tally_records
from passhat.runner import RunConfig, RunStore, TrialRecord, execute
from passhat.runner.health import DEFAULT_MAX_ERROR_RATE, EXIT_INCOMPLETE, incomplete
from passhat.runner.health import exit_code as health_exit_code
from passhat.runner.sanity import noop_passes
from passhat.suites.plan import plan_run, run_notes


@click.command()
@click.argument("suite")
@click.option("--agent", "agent_spec", required=True,
              help="careful, hasty, flaky, noop, openai:MODEL, anthropic:MODEL, module:function / path.py:function, "
                   "a service http://HOST:PORT/PATH, or a program cmd:\"COMMAND ARGS\"")
@click.option("--isolate", type=click.Choice(["none", "process"]), default="none", show_default=True,
              help="Run a Python agent in a process of its own per trial: a hung, CPU-bound or crashing agent "
                   "cannot stall or corrupt the run.")
@click.option("--trials", "-k", "--repeat", type=click.IntRange(1), default=4, show_default=True,
              help="Trials per case.")
@click.option("-j", "--concurrency", type=click.IntRange(1), default=4, show_default=True,
              help="Trials in flight at once (agents waiting on a model cost nothing).")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True,
              help="Run seed (≥ 0); trial seeds derive from it.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Run folder (default: runs/SUITE-AGENT-TIMESTAMP).")
@click.option("--resume", is_flag=True, help="Continue a killed run in --out without repeating trials.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or tables.")
@click.option("--by", "by", multiple=True, help="Break every figure down by this tag (repeatable; also split, group).")
@click.option("--no-sanity", is_flag=True, help="Skip the do-nothing-agent check of the suite.")
@click.option("--split", "splits", multiple=True, type=click.Choice(["dev", "holdout", "regression"]),
              help="Run only the cases of this split (repeatable: any of them).")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE",
              help="Run only cases with this tag value (repeatable: all keys must match; a repeated key, any value).")
@click.option("--frozen", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
              help="Refuse to run unless the suite equals this snapshot (see `passhat suite freeze`).")
@click.option("--record", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Call external tools for real and store their requests and responses in this cassette folder.")
@click.option("--replay", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Answer external tools from this cassette folder instead of calling them.")
@click.option("--gate", "gate_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Gate file: registered in the manifest before the first trial, evaluated at the end (exit 0/1/3).")
@click.option("--junit", type=click.Path(path_type=Path, dir_okay=False), default=None, help="Write JUnit XML here.")
@click.option("--summary-md", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write a Markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set).")
@click.option("--no-redact", is_flag=True, help="Write raw values (e-mail, phone, card numbers) to the run folder.")
@click.option("--redact-field", multiple=True, help="Also redact every value under this key (repeatable).")
@click.option("--redact-pattern", multiple=True, metavar="NAME=REGEX", help="Also redact matches of REGEX (repeatable).")
@click.option("--no-report", is_flag=True, help="Do not write RUN/report.html at the end.")
@click.option("--otlp", metavar="URL", default=None,
              help="At the end, export every trial's trace to this OTLP/HTTP endpoint (needs passhat[otel]).")
@click.option("--max-error-rate", type=click.FloatRange(0, 1), default=DEFAULT_MAX_ERROR_RATE, show_default=True,
              help="Exit 4 (incomplete) when more than this share of trials ended in infrastructure errors.")
@model_options
def run(suite: str, agent_spec: str, trials: int, concurrency: int, seed: int, out: Path | None,
        resume: bool, quiet: bool, by: tuple[str, ...], no_sanity: bool, no_redact: bool,
        redact_field: tuple[str, ...], redact_pattern: tuple[str, ...], gate_file: Path | None = None,
        junit: Path | None = None, summary_md: Path | None = None, no_report: bool = False,
        otlp: str | None = None, splits: tuple[str, ...] = (), tags: tuple[str, ...] = (),
        frozen: Path | None = None, record: Path | None = None, replay: Path | None = None, isolate: str = "none",
        max_error_rate: float = DEFAULT_MAX_ERROR_RATE, **model_kw: Any) -> None:
    """Run every case of SUITE (a built-in name or a folder) TRIALS times with AGENT."""
    if resume and out is None:
        fail("--resume needs --out RUN_FOLDER (the folder of the run to continue)")
    try:
        check_agent_spec(agent_spec, isolate)  # type: ignore[arg-type]
        if otlp:
            check_otlp_url(otlp, "--otlp")
        redactor = build_redactor(no_redact, redact_field, redact_pattern)
        plan = plan_run(load_suite(suite), splits=splits, tags=tags, frozen=frozen, record=record, replay=replay)
        loaded = plan.suite
        if resume and out is not None:
            check_same_selection(out, plan.manifest.get("selection"))
        setup = build_model_setup(agent_spec, isolate=isolate, **model_kw)
    except (PasshatError, ValueError) as exc:
        fail(suite_hint(str(exc), suite))
        return
    if out is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        safe_agent = re.sub(r"[^A-Za-z0-9._-]+", "_", agent_spec).strip("_")[:60] or "agent"
        out = Path("runs") / f"{loaded.name}-{safe_agent}-{stamp}"
    sanity = None if no_sanity else asyncio.run(noop_passes(loaded))
    if sanity:
        err.print(f"[yellow]warning:[/yellow] {len(sanity)} case(s) pass with an agent that does nothing: "
                  f"{', '.join(sanity)} — their assertions do not prove the work was done", highlight=False)
    for warning in setup.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    cfg = RunConfig(suite=loaded, agent=setup.agent, agent_spec=agent_spec, trials=trials, seed=seed,
                    concurrency=concurrency, out=out, user=setup.user, judge=setup.judge, redactor=redactor,
                    cassette=plan.cassette,
                    extra_manifest={"sanity": {"checked": sanity is not None, "noop_passes": sanity or []},
                                    "isolate": isolate, **setup.manifest, **plan.manifest})
    try:
        registered_gate = register_gate(gate_file, out, resume)
    except PasshatError as exc:
        fail(str(exc))
        return
    if registered_gate is not None:
        cfg.extra_manifest["gate"] = registered_gate  # written with the manifest, before the first trial
    total = len(loaded.cases) * trials
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, disable=quiet)
    with progress:
        task = progress.add_task(f"{loaded.name} · {agent_spec}", total=total)
        if resume:
            progress.update(task, completed=sum(1 for _ in RunStore(out).iter_records()))

        def advance(record: TrialRecord) -> None:
            progress.advance(task)

        try:
            store = asyncio.run(execute(cfg, resume=resume, on_record=advance))
        except PasshatError as exc:
            fail(str(exc))
            return
    manifest = store.read_manifest()
    # one pass over the records: the report's strata (every tag key) are computed here, not rebuilt by it
    strata = list(dict.fromkeys([*by, *([] if no_report else tag_keys(manifest))]))
    summary = build_summary(tally_records(store.trials_path), manifest, by=strata)  # only the fields it reads
    store.write_summary(summary)
    if quiet:
        err.print(one_line_result(summary), highlight=False)
    else:
        print_summary(summary, Console(), strata=by)
    for note in run_notes(summary, manifest):
        err.print(note, highlight=False)
    err.print(f"run folder: {out}", highlight=False)
    # the gate, gate.json, CI outputs and run health first: the report and export after them cannot change the exit code
    code = finish_run(out, summary, gated=registered_gate is not None, junit=junit, summary_md=summary_md, quiet=quiet)
    problem = incomplete(summary, store.iter_records(), max_error_rate)
    if problem is not None:
        err.print(f"[red]incomplete run:[/red] {escape(problem)} (exit {EXIT_INCOMPLETE})", highlight=False)
    code = health_exit_code(code, problem)
    after_run(out, summary, html=not no_report, otlp=otlp)
    if code:
        sys.exit(code)


def check_same_selection(out: Path, selection: dict[str, Any] | None) -> None:
    """``--resume`` must choose the same cases as the run it continues (same --split and --tag)."""
    old = RunStore(out).read_manifest().get("selection")
    before = old.get("describe") if old else None
    now = selection.get("describe") if selection else None
    if before != now:
        raise PasshatError(f"cannot resume {out}: it ran {'the cases selected by ' + before if before else 'every case'}, "
                           f"this command selects {'the cases selected by ' + now if now else 'every case'}; "
                           "pass the same --split and --tag as when it started")


def one_line_result(summary: dict[str, Any]) -> str:
    """What ``run -q`` prints instead of the tables: pass^1 and pass^n with their intervals."""
    s = summary["suite"]
    n = s["trials_per_case"]

    def metric(k: int) -> str:
        m = s["pass_hat_k"].get(str(k))
        if not m or m.get("estimate") is None:
            return f"pass^{k} —"
        return f"pass^{k} {m['estimate']:.3f} [{m['ci_low']:.2f}, {m['ci_high']:.2f}]"

    errors = f", {s['errors']} infrastructure error(s)" if s.get("errors") else ""
    ks = [1] if n == 1 else [1, n]
    return (f"{s['name']} · {summary['agent']}: " + ", ".join(metric(k) for k in ks)
            + f" over {s['cases']} case(s) × {n} trial(s){errors}")


def build_redactor(off: bool, fields: tuple[str, ...], patterns: tuple[str, ...]) -> Redactor:
    """The run's redactor from the command line; a bad pattern is bad input."""
    import re

    extra: dict[str, str] = {}
    for item in patterns:
        name, sep, rx = item.partition("=")
        if not sep or not name or not rx:
            raise PasshatError(f"--redact-pattern {item!r}: expected NAME=REGEX")
        try:
            re.compile(rx)
        except re.error as exc:
            raise PasshatError(f"--redact-pattern {name}: invalid regular expression: {exc}") from None
        extra[name] = rx
    return Redactor.build(extra_fields=fields, extra_patterns=extra, enabled=not off)
