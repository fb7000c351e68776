"""Terminal tables: per case c/n and pass^k, and the suite curve."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _ks(n: int) -> list[int]:
    """Columns to show: 1, 2, 4, 8, … up to n, and n itself."""
    ks, k = [], 1
    while k <= n:
        ks.append(k)
        k *= 2
    if n and ks[-1] != n:
        ks.append(n)
    return ks


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """Print the case table and the suite pass^k / pass@k rows."""
    console = console or Console()
    suite = summary["suite"]
    n = suite["trials_per_case"]
    ks = _ks(n)
    table = Table(title=f"{suite['name']} · agent {summary['agent']} · {suite['cases']} cases × {n} trials")
    table.add_column("case")
    table.add_column("c/n", justify="right")
    table.add_column("err", justify="right")
    for k in ks:
        table.add_column(f"pass^{k}", justify="right")
    table.add_column("first failing check", overflow="fold", max_width=60)
    for c in summary["cases"]:
        style = "green" if c["n"] and c["successes"] == c["n"] else ("red" if c["successes"] == 0 else "yellow")
        table.add_row(
            c["id"], f"{c['successes']}/{c['n']}", str(c["errors"] or ""),
            *(_fmt(c["pass_hat_k"].get(str(k))) for k in ks), c.get("top_failure") or "", style=style,
        )
    console.print(table)
    curve = Table(title="suite (mean over cases)")
    curve.add_column("metric")
    for k in ks:
        curve.add_column(f"k={k}", justify="right")
    for metric, label in (("pass_hat_k", "pass^k"), ("pass_at_k", "pass@k")):
        row = [suite[metric].get(str(k), {}) for k in ks]
        curve.add_row(label, *(_fmt(x.get("estimate")) for x in row))
    console.print(curve)
    if suite.get("errors"):
        console.print(f"[yellow]{suite['errors']} trial(s) ended in infrastructure errors "
                      "(not counted as pass or fail; see trials.jsonl)[/yellow]")
