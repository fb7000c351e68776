"""``passhat canary BASELINE CANDIDATE``: production outcomes of a candidate against a baseline's.

Exit codes as ``passhat gate``: 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 bad input (a malformed record names
file:line and the field).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from passhat.canary import CanaryResult, SegmentComparison, compare_canary, load_records
from passhat.commands.common import FiniteFloat
from passhat.console import stderr_console
from passhat.errors import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, PasshatError

EXIT_CODES = {"PASS": EXIT_OK, "FAIL": EXIT_FAILED, "INCONCLUSIVE": EXIT_INCONCLUSIVE}
STYLES = {"PASS": "green", "FAIL": "bold red", "INCONCLUSIVE": "yellow"}


def _ci(low: float, high: float, fmt: str) -> str:
    return "—" if math.isnan(low) else f"[{low:{fmt}}, {high:{fmt}}]"


def _rows(s: SegmentComparison) -> list[tuple[str, str, str, str, str]]:
    rows = []
    for outcome, r in s.rates.items():
        if r is not None:
            rows.append((f"{outcome} rate", f"{r.baseline:.1%}", f"{r.candidate:.1%}", f"{r.difference:+.1%}",
                         _ci(r.low * 100, r.high * 100, "+.1f") + " pts"))
    for name, m, fmt in (("P95 latency (s)", s.latency_p95, "+.3g"),
                         ("cost / success, ratio", s.cost_per_success_ratio, ".3f"),
                         ("cost / success, difference", s.cost_per_success_difference, "+.4g")):
        if m is not None:
            estimate = f"{m.estimate:{fmt}}" if math.isfinite(m.estimate) else "—"  # a ratio to zero: undefined
            rows.append((name, f"{m.baseline:.4g}", f"{m.candidate:.4g}", estimate, _ci(m.low, m.high, fmt)))
    return rows


def print_canary(result: CanaryResult, console: Console) -> None:
    """One table overall, one per segment, then the decision."""
    for s in [result.overall, *result.segments]:
        title = "overall" if s.segment is None else f"segment {escape(s.segment)}"
        table = Table(title=f"{title}: baseline {s.n_baseline} records, candidate {s.n_candidate} "
                            f"({result.confidence:.0%} intervals)", box=box.SIMPLE_HEAD, pad_edge=False)
        for column in ("metric", "baseline", "candidate", "candidate − baseline", "interval"):
            table.add_column(column, no_wrap=column == "metric")
        rows = _rows(s)
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        if not rows:
            table.add_row("no records in one of the versions", "", "", "", "")
        console.print(table)
    d = result.decision
    success = result.overall.rates["success"]
    assert success is not None
    console.print(f"[{STYLES[d]}]canary {d}[/] (exit {EXIT_CODES[d]}): success rate difference "
                  f"{success.difference:+.1%}, interval [{success.low:+.2%}, {success.high:+.2%}], "
                  f"allowed drop {result.max_drop:.1%}", highlight=False)


def _json(result: CanaryResult) -> dict[str, Any]:
    def clean(value: Any) -> Any:  # NaN and ±inf are not JSON: null, "no value" (a ratio to a zero baseline)
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return {**clean(dataclasses.asdict(result)), "exit_code": EXIT_CODES[result.decision]}


@click.command("canary")
@click.argument("baseline", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.argument("candidate", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--max-drop", type=FiniteFloat(0, 1, max_open=True), default=0.02, show_default=True,
              help="How far the success rate may drop (0.02: two points).")
@click.option("--confidence", type=FiniteFloat(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Two-sided confidence of every interval.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--resamples", type=click.IntRange(100), default=2000, show_default=True,
              help="Bootstrap resamples for latency and cost.")
@click.option("--json", "json_file", type=click.Path(path_type=Path, dir_okay=False), help="Write the result here.")
def canary(baseline: Path, candidate: Path, max_drop: float, confidence: float, seed: int, resamples: int,
           json_file: Path | None) -> None:
    """Compare CANDIDATE's production outcomes with BASELINE's: exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 bad input.

    BASELINE and CANDIDATE are JSONL files of outcome records. Success, handoff and error rates get
    Newcombe's hybrid score interval; P95 latency and cost per success a seeded percentile bootstrap;
    overall and per segment. PASS when the success rate's lower bound is above −MAX_DROP, FAIL when its
    upper bound is below −MAX_DROP (docs/canary.md).
    """
    result = compare_canary(load_records(baseline), load_records(candidate), max_drop=max_drop, seed=seed,
                            confidence=confidence, n_resamples=resamples)
    print_canary(result, Console())
    if json_file is not None:
        try:
            json_file.write_text(json.dumps(_json(result), indent=2, allow_nan=False) + "\n", encoding="utf-8")
        except OSError as exc:
            raise PasshatError(f"{json_file}: cannot write: {exc.strerror or exc}") from exc
        stderr_console().print(escape(f"wrote {json_file}"), highlight=False)
    sys.exit(EXIT_CODES[result.decision])
