"""``passhat calibrate``: compare the judge with human labels; exit 1 when a required minimum is missed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from passhat.calibrate import Thresholds, calibration_report, read_judgments, read_labels, read_pairwise
from passhat.commands.common import FiniteFloat
from passhat.console import stderr_console
from passhat.errors import EXIT_FAILED, EXIT_OK, PasshatError
from passhat.models.finite import dumps_strict


def judge_info(path: Path) -> dict[str, Any]:
    """The judge's pins: from a run folder's manifest, or the first line of a judgments file."""
    try:
        if path.is_dir():
            from passhat.runner.store import RunStore

            judge = RunStore(path).manifest().models.judge
            return judge.model_dump(mode="json", exclude_unset=True) if judge is not None else {}
        with path.open(encoding="utf-8") as fh:
            first = fh.readline()
        return dict(json.loads(first).get("judge") or {}) if first.strip() else {}  # not a run file: judgments
    except (OSError, ValueError, PasshatError):
        return {}


def _fmt(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def print_report(report: dict[str, Any], console: Console) -> None:
    table = Table(title=f"judge calibration · {report['items']} items", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI / note")
    for name in ("percent_agreement", "sensitivity", "specificity"):
        m = report[name]
        table.add_row(name.replace("_", " "), _fmt(m["estimate"]), f"{_fmt(m['ci_low'])}–{_fmt(m['ci_high'])} (n={m['n']})")
    table.add_row("Cohen's kappa", _fmt(report["cohen_kappa"]), "collapses under skewed prevalence")
    table.add_row("Gwet's AC1", _fmt(report["gwet_ac1"]), "")
    prev = report["prevalence"]
    table.add_row("human pass rate", _fmt(prev["human_pass_rate"]), f"judge: {_fmt(prev['judge_pass_rate'])}")
    swap = report["swap_consistency"]
    if swap is not None:
        table.add_row("swap consistency", _fmt(swap["estimate"]), f"{swap['valid']} pairs")
    rt = report["test_retest"]
    table.add_row("test-retest", _fmt(rt["estimate"]), f"{rt['items']} items judged twice or more")
    pr = report["pass_rate"]
    table.add_row("pass rate (judge, raw)", _fmt(pr["judge_raw"]), f"{pr['judged_items']} judged items")
    table.add_row("pass rate (Rogan–Gladen)", _fmt(pr["rogan_gladen"]), "corrected for judge error")
    table.add_row("judge undecided", str(report["judge_undecided"]), "counted as fail, as in the trials")
    console.print(table)
    for failure in report["failures"]:
        console.print(f"[red]below threshold:[/red] {escape(failure)}", highlight=False)


@click.command()
@click.option("--labels", type=click.Path(path_type=Path), required=True,
              help="Human labels: CSV or JSONL with case_id, trial, label (pass/fail) [, criterion].")
@click.option("--judgments", type=click.Path(path_type=Path), required=True,
              help="A run folder (judge grades in trials.jsonl) or a judgments JSONL from `passhat judge`.")
@click.option("--pairwise", type=click.Path(path_type=Path), default=None,
              help="Pairwise JSONL from `passhat pairwise` (for the swap consistency).")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the report here as JSON (format passhat.calibration/1).")
@click.option("--min-items", type=click.IntRange(0), default=None, help="Minimum labelled items with a judge verdict.")
@click.option("--min-agreement", type=FiniteFloat(), default=None, help="Minimum percent agreement (0-1).")
@click.option("--min-kappa", type=FiniteFloat(), default=None, help="Minimum Cohen's kappa.")
@click.option("--min-ac1", type=FiniteFloat(), default=None, help="Minimum Gwet's AC1.")
@click.option("--min-sensitivity", type=FiniteFloat(), default=None, help="Minimum share of human passes the judge passes (0-1).")
@click.option("--min-specificity", type=FiniteFloat(), default=None, help="Minimum share of human fails the judge fails (0-1).")
@click.option("--min-swap-consistency", type=FiniteFloat(), default=None,
              help="Minimum position-swap consistency (0-1; needs --pairwise).")
@click.option("--min-test-retest", type=FiniteFloat(), default=None,
              help="Minimum test-retest consistency (0-1; needs a judgments file with repeats).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report instead of a table.")
def calibrate(labels: Path, judgments: Path, pairwise: Path | None, out: Path | None, as_json: bool,
              **minimums: Any) -> None:
    """Agreement of the judge with human labels: p_o, Cohen's κ, Gwet's AC1, prevalence, sensitivity and
    specificity (Wilson CIs), swap and test-retest consistency, and the Rogan–Gladen corrected pass rate.
    Exits 1 when a --min-* threshold is not met, 2 on bad input."""
    if judgments.is_dir() and not (judgments / "manifest.json").is_file():
        raise PasshatError(f"--judgments {judgments}: not a run folder (no manifest.json) — give a run folder or a "
                        "judgments JSONL from `passhat judge`")
    report = calibration_report(
        read_labels(labels), read_judgments(judgments), read_pairwise(pairwise) if pairwise else None,
        thresholds=Thresholds(**minimums), judge=judge_info(judgments),
    )
    if out is not None:
        out.write_text(dumps_strict(report, str(out), indent=2) + "\n", "utf-8")
    if as_json:
        click.echo(dumps_strict(report, "the calibration report", indent=2))
    else:
        print_report(report, Console())
    if report["items"] == 0:
        stderr_console().print("[yellow]warning:[/yellow] no labelled item has a judge verdict (check case ids, trials, "
                               "criteria)", highlight=False)
    sys.exit(EXIT_OK if report["passed"] else EXIT_FAILED)
