"""``passhat regrade RUN --out DIR``: re-apply today's cases and graders to a stored run.

Exit codes: 0 done (whatever changed), 2 bad input (not a run folder, suite not found, --out in use).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from passhat.console import stderr_console


@click.command("regrade")
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--suite", "suite_ref", default=None,
              help="Suite to grade against (default: the folder recorded in the run's manifest).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), required=True, help="New run folder.")
@click.option("--quiet", "-q", is_flag=True, help="No summary table.")
def regrade_command(run_folder: Path, suite_ref: str | None, out: Path, quiet: bool) -> None:
    """Re-grade RUN_FOLDER's stored trajectories and final states without re-running the agent."""
    from passhat.models import Summary
    from passhat.regrade import regrade_run
    from passhat.report.terminal import print_summary
    from passhat.runner.store import SUMMARY

    err = stderr_console()
    report = regrade_run(run_folder, out, suite_ref=suite_ref)
    if report.changed_cases:
        err.print(escape(f"re-graded with changed case(s): {', '.join(report.changed_cases)}"), highlight=False)
    if report.missing_cases:
        err.print(f"[yellow]not in the suite any more (skipped {report.skipped_trials} trial(s)):[/yellow] "
                  f"{escape(', '.join(report.missing_cases))}", highlight=False)
    for ch in report.outcome_changes:
        err.print(escape(f"  {ch.case_id} trial {ch.trial}: {ch.before} → {ch.after}"), highlight=False)
    err.print(escape(f"{report.trials} trial(s) re-graded, {len(report.outcome_changes)} outcome(s) changed; "
                     f"run folder: {out}"), highlight=False)
    if not quiet:
        print_summary(Summary.load(out / SUMMARY), Console())
