"""The ``passhat`` command line.

Exit codes: 0 success (a run that completed, whatever the agent scored); 2 bad input (a malformed
case, an unknown agent, an unusable run folder).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from passhat.agents import load_agent
from passhat.cases import load_suite
from passhat.errors import PasshatError
from passhat.report.terminal import print_summary
from passhat.results import build_summary
from passhat.runner import RunConfig, RunStore, TrialRecord, execute
from passhat.runner.sanity import noop_passes

EXIT_OK, EXIT_BAD_INPUT = 0, 2
err = Console(stderr=True)


def _fail(message: str) -> None:
    err.print(f"[red]error:[/red] {message}", highlight=False, markup=True)
    sys.exit(EXIT_BAD_INPUT)


@click.group()
@click.version_option(package_name="passhat")
def main() -> None:
    """passhat — evaluate tool-using agents: sandboxed worlds, final-state grading, pass^k."""


@main.command()
@click.argument("suite")
@click.option("--agent", "agent_spec", required=True,
              help="careful, hasty, flaky, noop, or module:function / path.py:function")
@click.option("--trials", "-k", "--repeat", type=click.IntRange(1), default=4, show_default=True,
              help="Trials per case.")
@click.option("-j", "--concurrency", type=click.IntRange(1), default=4, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Run seed; trial seeds derive from it.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Run folder (default: runs/SUITE-AGENT-TIMESTAMP).")
@click.option("--resume", is_flag=True, help="Continue a killed run in --out without repeating trials.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or tables.")
@click.option("--by", "by", multiple=True, help="Break every figure down by this tag (repeatable; also split, group).")
@click.option("--no-sanity", is_flag=True, help="Skip the do-nothing-agent check of the suite.")
def run(suite: str, agent_spec: str, trials: int, concurrency: int, seed: int, out: Path | None,
        resume: bool, quiet: bool, by: tuple[str, ...], no_sanity: bool) -> None:
    """Run every case of SUITE (a built-in name or a folder) TRIALS times with AGENT."""
    try:
        loaded = load_suite(suite)
        agent = load_agent(agent_spec)
    except (PasshatError, ValueError) as exc:
        _fail(str(exc))
        return
    if out is None:
        if resume:
            _fail("--resume needs --out RUN_FOLDER")
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        safe_agent = agent_spec.replace(":", "_").replace("/", "_")
        out = Path("runs") / f"{loaded.name}-{safe_agent}-{stamp}"
    sanity = None if no_sanity else asyncio.run(noop_passes(loaded))
    if sanity:
        err.print(f"[yellow]warning:[/yellow] {len(sanity)} case(s) pass with an agent that does nothing: "
                  f"{', '.join(sanity)} — their assertions do not prove the work was done", highlight=False)
    cfg = RunConfig(suite=loaded, agent=agent, agent_spec=agent_spec, trials=trials, seed=seed,
                    concurrency=concurrency, out=out,
                    extra_manifest={"sanity": {"checked": sanity is not None, "noop_passes": sanity or []}})
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
            _fail(str(exc))
            return
    summary = build_summary(store.iter_records(), store.read_manifest(), by=by)
    store.write_summary(summary)
    if not quiet:
        print_summary(summary, Console())
    err.print(f"run folder: {out}", highlight=False)


@main.command()
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--by", "by", multiple=True, help="Break every figure down by this tag (repeatable).")
def show(run_folder: Path, by: tuple[str, ...]) -> None:
    """Recompute and print the summary of RUN_FOLDER from its trials.jsonl."""
    store = RunStore(run_folder)
    try:
        summary = build_summary(store.iter_records(), store.read_manifest(), by=by)
    except PasshatError as exc:
        _fail(str(exc))
        return
    print_summary(summary, Console())


@main.group()
def cases() -> None:
    """Work with case files."""


@cases.command("reference")
def cases_reference() -> None:
    """Print the case-file reference (Markdown), generated from the models."""
    from passhat.cases.reference import case_file_reference

    click.echo(case_file_reference(), nl=False)


@cases.command("schema")
def cases_schema() -> None:
    """Print the JSON Schema of a case file (for editors and validators)."""
    import json

    from passhat.cases import Case

    click.echo(json.dumps(Case.model_json_schema(), indent=2))
