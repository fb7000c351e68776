"""``passhat run``: run a suite's cases k times with an agent, write the run folder, gate, report.

A thin layer over :func:`passhat.evaluate`, the one code path of a run: this command parses the options,
calls it (drawing its progress) and prints what it returns, then writes the CI outputs and the report.
"""

from __future__ import annotations

import shlex
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import passhat.api
from passhat.agents.bounds import DEFAULT_FILE_SIZE, DEFAULT_MEMORY, DEFAULT_PROCESSES
from passhat.api import Progress as RunProgress
from passhat.api import Run, RunOptions
from passhat.commands.common import EXIT_BAD_INPUT, FiniteFloat, fail, stderr, suite_hint
from passhat.commands.export import check_otlp_url
from passhat.commands.run_options import model_options, run_options, sequential_looks
from passhat.errors import PasshatError
from passhat.runner.health import DEFAULT_MAX_ERROR_RATE, EXIT_INCOMPLETE
from passhat.runner.health import exit_code as health_exit_code
from passhat.runner.run import MAX_CONCURRENCY, MAX_PLANNED_TRIALS, MAX_TRIALS

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


@click.command()
@click.argument("suite")
@click.option("--agent", "agent_spec", required=True,
              help="careful, hasty, flaky, noop, openai:MODEL, anthropic:MODEL, module:function / path.py:function, "
                   "a service http://HOST:PORT/PATH, or a program cmd:\"COMMAND ARGS\"")
@click.option("--isolate", type=click.Choice(["none", "process"]), default="none", show_default=True,
              help="Run a Python agent in a process of its own per trial: a hung, CPU-bound or crashing agent "
                   "cannot stall or corrupt the run (and, like cmd: agents, in the agents' sandbox).")
@click.option("--agent-env", "agent_env", multiple=True, metavar="NAME",
              help="Pass this environment variable to a cmd: or --isolate process agent (repeatable; e.g. an API key). "
                   "Nothing else of passhat's environment reaches it.")
@click.option("--agent-allow-host", "agent_allow_hosts", multiple=True, metavar="HOST[:PORT]",
              help="Let a cmd: or --isolate process agent connect to this host (port 443 unless given; repeatable; "
                   "IPv6 in brackets: [::1]:8443), e.g. its model provider. In its sandbox it reaches nothing else "
                   "but its trial's tools.")
@click.option("--agent-processes", "agent_processes", default=str(DEFAULT_PROCESSES), show_default=True, metavar="N",
              help="Processes and threads a cmd: or --isolate process agent's program may have at once (or none): "
                   "a fork bomb fails its own trial, not the machine.")
@click.option("--agent-memory", "agent_memory", default=DEFAULT_MEMORY, show_default=True, metavar="SIZE",
              help="Memory such a program may use, e.g. 512M or 4G (or none); past it the trial fails, naming the bound.")
@click.option("--agent-file-size", "agent_file_size", default=DEFAULT_FILE_SIZE, show_default=True, metavar="SIZE",
              help="The size any one file such a program writes may reach (or none).")
@click.option("--agent-model-relay", "agent_model_relay", multiple=True, metavar="NAME=URL",
              help="Relay the model calls an agent makes through its own SDK to this provider (e.g. "
                   "openai=https://api.openai.com/v1; repeatable), so a provider that stalls is an outage, not the "
                   "agent's time limit. The agent gets the relay's URL as NAME_BASE_URL (OPENAI_BASE_URL) or "
                   "episode.model_urls[NAME].")
@click.option("--trials", "-k", "--repeat", type=click.IntRange(1, MAX_TRIALS), default=4, show_default=True,
              help=f"Trials per case (at most {MAX_TRIALS}; cases × trials at most {MAX_PLANNED_TRIALS:,}).")
@click.option("-j", "--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=4, show_default=True,
              help=f"Trials in flight at once (agents waiting on a model cost nothing; at most {MAX_CONCURRENCY}, "
                   "and no more than the run has trials).")
@click.option("--executor", type=click.Choice(["local", "processes", "ray"]), default="local", show_default=True,
              help="Where trials run: asyncio workers in this process, worker processes forked here (one per CPU, "
                   "for trials whose own CPU fills a core), or the worker processes of a Ray cluster (needs "
                   "passhat[ray]); same records, resume and statistics.")
@click.option("--workers", type=click.IntRange(1, 256), default=None, metavar="N",
              help="With --executor processes: worker processes (default: one per CPU this process may use).")
@click.option("--ray-address", default=None, metavar="ADDR",
              help="With --executor ray: the cluster to join (HOST:PORT, ray://HOST:PORT, auto); default: start one here.")
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
@click.option("--case", "case_ids", multiple=True, metavar="ID",
              help="Run only this case (repeatable: any of them; with --split/--tag, cases matching all).")
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
@click.option("--sequential", is_flag=True,
              help="With --gate: run the trials in rounds up to each of --looks and stop once the gate is decided, "
                   "α spent across the looks (docs/gates.md).")
@click.option("--looks", default=None, metavar="N,N,…",
              help="With --sequential: trials per case at each look (default: a quarter, half and all of --max-trials).")
@click.option("--max-trials", type=click.IntRange(2, MAX_TRIALS), default=None, metavar="N",
              help="With --sequential: trials per case at the last look (default 16, or the last of --looks).")
@click.option("--baseline", type=click.Path(path_type=Path, exists=True, file_okay=False), default=None,
              help="Baseline run for the gate's no_new_failures and non_inferior rules (at every look with --sequential).")
@click.option("--junit", type=click.Path(path_type=Path, dir_okay=False), default=None, help="Write JUnit XML here.")
@click.option("--summary-md", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write a Markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set).")
@click.option("--no-redact", is_flag=True, help="Write raw values (e-mail, phone, card numbers) to the run folder.")
@click.option("--redact-field", multiple=True, help="Also redact every value under this key (repeatable).")
@click.option("--redact-pattern", multiple=True, metavar="NAME=REGEX", help="Also redact matches of REGEX (repeatable).")
@click.option("--no-report", is_flag=True, help="Do not write RUN/report.html at the end.")
@click.option("--otlp", metavar="URL", default=None,
              help="At the end, export every trial's trace to this OTLP/HTTP endpoint (needs passhat[otel]).")
@click.option("--max-error-rate", type=FiniteFloat(0, 1), default=DEFAULT_MAX_ERROR_RATE, show_default=True,
              help="Exit 4 (incomplete) when more than this share of trials ended in infrastructure errors.")
@click.option("--pg-url", metavar="URL", default=None,
              help="The PostgreSQL server for Postgres(...) fixtures (default: $PASSHAT_PG_URL, else a throwaway "
                   "cluster passhat starts itself when PostgreSQL is installed; docs/worlds.md).")
@model_options
@click.pass_context
def run(ctx: click.Context, suite: str, agent_spec: str, out: Path | None, resume: bool, quiet: bool,
        junit: Path | None, summary_md: Path | None, no_report: bool, otlp: str | None, max_error_rate: float,
        pg_url: str | None, **given: Any) -> None:
    """Run every case of SUITE (a built-in name or a folder) TRIALS times with AGENT."""
    if resume and out is None:
        fail("--resume needs --out RUN_FOLDER (the folder of the run to continue)")
    if pg_url:
        from passhat.worlds.postgres.server import configure  # connects only when a Postgres fixture is built

        configure(pg_url)
    try:
        if otlp:
            check_otlp_url(otlp, "--otlp")
        chosen = given.pop("sequential"), given.pop("looks"), given.pop("max_trials")  # not a run file: command parameters
        looks = sequential_looks(ctx, *chosen)
        options = run_options(ctx, given)
        if looks is not None:
            options = RunOptions.build(options, sequential=looks)
    except PasshatError as exc:
        fail(str(exc))
    progress = None if quiet or not stderr().is_terminal else progress_bar()  # a bar in a CI log is noise (and a blank line)
    with progress or nullcontext():
        bar: list[TaskID] = []
        where: list[RunProgress] = []

        def advance(p: RunProgress) -> None:
            where[:] = [p]
            if progress is None:
                return
            if not bar:  # the first report, before the first trial: the plan's size (and, resumed, what is done)
                bar.append(progress.add_task(f"{p.suite} · {agent_spec}", total=p.total, completed=p.done))
            else:
                progress.update(bar[0], completed=p.done)

        try:
            run = passhat.api.evaluate(
                suite, agent_spec, options, out=out, resume=resume, progress=advance,
                on_warning=_print_warning)
        except (PasshatError, ValueError) as exc:
            fail(suite_hint(str(exc), suite))
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM (passhat.shutdown): say where the records are
            if where and where[0].folder is not None:
                p = where[0]
                stderr().print(f"stopped: {p.done} of {p.total} trial(s) recorded in {p.folder}; continue with "
                          f"`passhat run {shlex.quote(suite)} --agent {shlex.quote(agent_spec)} --resume --out "
                          f"{shlex.quote(str(p.folder))}` (it goes on with the options it started with)",
                          highlight=False, markup=False)
            raise
    # what only the end of a run needs loads here, not before the first trial: the gate's statistics (scipy),
    # the report's templates, the CI writers, rich (passhat run's start-up is the user's wait for the first trial)
    from rich.console import Console
    from rich.markup import escape

    from passhat.commands.report import after_run
    from passhat.report.headline import headline
    from passhat.report.notes import run_notes
    from passhat.report.terminal import print_summary

    summary = run.summary
    if quiet:  # the run in one sentence, without the tables
        stderr().print(headline(summary).text, highlight=False, markup=False)
    else:
        print_summary(summary, Console(), strata=options.by)
    for note in run_notes(summary, run.manifest):
        stderr().print(note, highlight=False)
    stderr().print(f"run folder: {run.folder}", highlight=False)
    # the gate, CI outputs and run health first: the report and export after them cannot change the exit code
    code = finish_outputs(run, junit=junit, summary_md=summary_md, quiet=quiet)
    problem = run.incomplete(max_error_rate)
    if problem is not None:
        stderr().print(f"[red]incomplete run:[/red] {escape(problem)} (exit {EXIT_INCOMPLETE})", highlight=False)
    code = health_exit_code(code, problem)
    after_run(run.folder, summary, html=not no_report, otlp=otlp)
    if code:
        sys.exit(code)


def progress_bar() -> Progress:
    """The bar a run draws on a terminal: the suite and agent, trials done of planned, time elapsed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=stderr())


def finish_outputs(run: Run, *, junit: Path | None, summary_md: Path | None, quiet: bool) -> int:
    """Print the gate evaluate() decided, write the CI outputs; the exit code so far (2 when the gate could not
    be evaluated: then no CI output is written, as a gate error is bad input)."""
    from rich.console import Console
    from rich.markup import escape

    from passhat.commands.outputs import write_ci_outputs

    if run.gate_error is not None:
        stderr().print(f"[red]error:[/red] gate: {escape(run.gate_error)}", highlight=False)
        return EXIT_BAD_INPUT
    gate = run.gate_result
    if gate is not None:
        from passhat.commands.gate import print_gate  # the gate command's module (compare, the gate's rules): only then

        print_gate(gate, stderr() if quiet else Console())
    try:
        written = write_ci_outputs(run.folder, run.summary, gate, junit=junit, summary_md=summary_md)
    except OSError as exc:
        stderr().print(f"[red]error:[/red] cannot write CI output: {escape(str(exc))}", highlight=False)
        return EXIT_BAD_INPUT
    for path in written:
        stderr().print(f"wrote {path}", highlight=False)
    return run.gate_result.exit_code if run.gate_result is not None else 0


def _print_warning(text: str) -> None:
    """A run's warning on stderr, its text escaped: it quotes case ids, paths and rule labels ("never fails
    [risk=high]") that rich would read as markup. rich loads here, at the first warning, not before the first
    trial of a quiet run."""
    from rich.markup import escape

    stderr().print(f"[yellow]warning:[/yellow] {escape(text)}", highlight=False)
