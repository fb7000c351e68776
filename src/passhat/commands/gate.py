"""``passhat gate RUN``, and printing a gate result (``passhat run --gate`` prints through here too).

Exit codes: 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 bad input (malformed gate file, a gate file changed since
it was registered, unusable baseline, missing calibration file).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from passhat.commands.outputs import write_ci_outputs
from passhat.console import stderr_console
from passhat.errors import PasshatError, describe_os_error
from passhat.gate import evaluate_gate, write_gate_result
from passhat.models import GateResult
from passhat.report.markdown import ICONS
from passhat.report.terminal import fit_width
from passhat.results import read_summary

STYLES = {"PASS": "green", "FAIL": "bold red", "INCONCLUSIVE": "yellow", "SKIPPED": "dim"}


def print_gate(result: GateResult, console: Console) -> None:
    """Every rule with its outcome, numbers and reason; overrides and missing pre-registration loudly."""
    info = result.gate
    if info.override:
        console.print(f"[bold white on red] GATE CHANGED AFTER THE RUN STARTED [/] {escape(info.override.message)}: "
                      f"registered sha256 {info.override.registered_sha256[:12]}…, used "
                      f"{info.override.used_sha256[:12]}… (recorded in gate.json)", highlight=False, soft_wrap=True)
    elif not info.preregistered:
        console.print("[bold yellow]warning:[/] this gate was NOT pre-registered (not recorded in the manifest "
                      "before the first trial); its outcome is reported as such in gate.json", highlight=False,
                      soft_wrap=True)
    table = Table(title=f"gate: {escape(info.name)} (one-sided α = {info.alpha:g})", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("outcome", no_wrap=True)
    table.add_column("rule: reason (numbers and bounds in gate.json)", overflow="fold", ratio=1)
    for r in result.rules:
        table.add_row(f"[{STYLES[r.outcome]}]{r.outcome}[/]", f"[bold]{escape(r.name)}[/bold]: {escape(r.reason)}")
    fit_width(console, table)  # a CI log: every rule's reason on one line
    console.print(table)
    outcome = result.outcome
    console.print(f"[{STYLES[outcome]}]{ICONS[outcome]} gate {outcome}[/] (exit {result.exit_code})", highlight=False)


@click.command("gate")
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--gate", "gate_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Gate file (default: the one registered when the run started).")
@click.option("--baseline", type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="Baseline run folder for no_new_failures and non_inferior rules.")
@click.option("--allow-gate-change", is_flag=True,
              help="Evaluate a gate file that differs from the registered one; the override is recorded.")
@click.option("--allow-changed-cases", is_flag=True,
              help="Compare with a baseline of a different suite version on its unchanged cases only.")
@click.option("--junit", type=click.Path(path_type=Path, dir_okay=False), help="Write JUnit XML here.")
@click.option("--summary-md", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a Markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set).")
def gate(run_folder: Path, gate_file: Path | None, baseline: Path | None, allow_gate_change: bool,
         allow_changed_cases: bool, junit: Path | None, summary_md: Path | None) -> None:
    """Evaluate the release gate of RUN_FOLDER: exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 bad input."""
    result = evaluate_gate(run_folder, gate_file, baseline, allow_gate_change=allow_gate_change,
                           allow_changed_cases=allow_changed_cases)
    summary = read_summary(run_folder)
    path = write_gate_result(run_folder, result)
    print_gate(result, Console())
    try:
        written = [path, *write_ci_outputs(run_folder, summary, result, junit=junit, summary_md=summary_md)]
    except OSError as exc:
        raise PasshatError(f"cannot write CI output: {describe_os_error(exc)}") from exc
    for p in written:
        stderr_console().print(escape(f"wrote {p}"), highlight=False)
    if (run_folder / "report.html").exists():  # a report that predates this verdict would show the old one (or none)
        from passhat.commands.report import after_run

        after_run(run_folder, summary, html=True, otlp=None)
    sys.exit(result.exit_code)
