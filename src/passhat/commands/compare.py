"""``passhat compare BASE CANDIDATE``: paired, case-by-case comparison of two runs of one suite.

Exit codes: 0 when the comparison was made (whatever it found), 2 bad input (not run folders,
different suites without ``--allow-changed-cases``). Gating on the result is ``passhat gate``'s job.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from passhat.commands.common import FiniteFloat
from passhat.compare import compare_folders, write_comparison
from passhat.metric_names import key_label, parse_metric_key, shown_ks
from passhat.models import CaseChange, Comparison, PairedMetric
from passhat.report.files import write_atomic
from passhat.rounding import interval


def _pct(x: float | None, signed: bool = False, digits: int = 3) -> str:
    return "—" if x is None else (f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}")


def _p(x: float | None, spec: str = ".2g") -> str:
    return "—" if x is None else format(x, spec)


def changes_table(rows: list[CaseChange], title: str, style: str) -> Table:
    table = Table(title=title, title_style=style)
    tested = any(r.p_value is not None for r in rows)
    for col in ("case", "base", "candidate", *(["p (Fisher)"] if tested else []), "candidate's most common failure"):
        table.add_column(col, overflow="fold")
    for r in rows:
        p = [_p(r.p_value, ".3g")] if tested else []
        table.add_row(escape(r.id), r.base, r.candidate, *p, escape(r.reason or ""), style=style)
    return table


TESTS = {"paired_t": "paired t", "paired_t_clustered": "paired t (clustered by group)", "mcnemar": "McNemar",
         "mcnemar_midp": "McNemar mid-p", "bootstrap_bca": "paired BCa bootstrap"}
INTERVALS = {"t": "t over cases; Tango's score interval for 0/1 metrics", "bca": "paired BCa bootstrap over cases"}


def metrics_table(metrics: dict[str, PairedMetric], title: str, strata: bool = False, level: float = 0.95) -> Table:
    """One row per metric; red when the change on these cases is significant downwards, green upwards."""
    tests = sorted({TESTS.get(m.test, m.test) for m in metrics.values()})
    notes = ["p: nothing changed on these cases (within-case permutation test)",
             f"interval: for cases like these ({', '.join(tests)} ∪ pseudo-case)"]
    notes += ["Holm: adjusted within each metric"] if strata else []
    notes.append("MDE: a uniform drop of every case's pass rate found with 80 % power")
    if any(m.mde is None for m in metrics.values()):
        notes.append("MDE —: no drop is detectable at this size")
    table = Table(title=title, caption="; ".join(notes), box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    cols = ("stratum" if strata else "metric", "base", "cand", "Δ", "interval", "p", "Holm" if strata else "r", "MDE", "n")
    for col in cols:
        table.add_column(col, justify="left" if col in ("metric", "stratum") else "right", no_wrap=True)
    d = 2 if strata else 3
    for name, m in metrics.items():
        changed = m.p_value is not None and m.p_value < 1 - level
        style = ("red" if m.delta < 0 else "green") if changed else None
        table.add_row(name, _pct(m.base, digits=d), _pct(m.candidate, digits=d), _pct(m.delta, True, d),
                      interval(m.ci_low, m.ci_high, d, signed=True), _p(m.p_value),
                      _p(m.p_holm) if strata else _pct(m.correlation), _pct(m.mde, digits=d),
                      str(m.cases), style=style)
    return table


def _shown(metrics: dict[str, PairedMetric]) -> dict[str, PairedMetric]:
    """pass^k and pass@k for k = 1, 2, 4, … and the largest k (the JSON has every k); pass@1 is pass^1."""
    ks = [parse_metric_key(name)[1] for name in metrics]
    keep = set(shown_ks(max(ks))) if ks else set()
    return {key_label(n): m for n, m in metrics.items() if parse_metric_key(n)[1] in keep and n != "pass_at_1"}


def print_comparison(result: Comparison, console: Console) -> None:
    """New failures first, then new passes, the metric table and the strata."""
    base, cand = result.base, result.candidate
    console.print(f"[bold]{escape(str(cand.suite))}[/bold]: candidate [bold]{escape(str(cand.agent))}[/bold] "
                  f"({escape(cand.folder)}) vs base [bold]{escape(str(base.agent))}[/bold] ({escape(base.folder)}) · "
                  f"{result.cases.compared} paired case(s)", highlight=False)
    for role, run in (("base", base), ("candidate", cand)):
        if run.status != "complete":
            console.print(f"[yellow]warning: the {role} run is not complete (status {run.status!r})[/yellow]")
    changes = result.changes
    significant = [r for r in changes.new_failures if r.significant]
    chance = [r for r in changes.new_failures if not r.significant]
    if significant:
        console.print(changes_table(significant, f"{len(significant)} NEW FAILURE(S): passed every trial in base, "
                                    "significantly less often in candidate (Fisher, discrete Benjamini–Hochberg)", "bold red"))
    else:
        console.print("[green]no significant new failures[/green]")
    if chance:
        console.print(changes_table(chance, f"{len(chance)} case(s) that passed every base trial failed a candidate "
                                    "trial — within what chance gives an unchanged agent", "yellow"))
    if changes.new_passes:
        console.print(changes_table(changes.new_passes, f"{len(changes.new_passes)} new pass(es)", "green"))
    if changes.missing:
        missing = escape(", ".join(r.id for r in changes.missing))
        console.print(f"[yellow]no graded trial in candidate for: {missing}[/yellow]")
    level = f"{result.confidence:.0%}"
    method = INTERVALS.get(result.interval, result.interval)
    shown = _shown(result.metrics)
    if shown:
        console.print(metrics_table(shown, f"paired differences, {level} interval ({method})", level=result.confidence))
    else:
        console.print("[yellow]no paired difference: no case has a graded trial in both runs[/yellow]", highlight=False)
    for key, values in result.strata.items():
        rows = {f"{escape(v)} {key_label(name)}": m for v, block in values.items() for name, m in block.metrics().items()}
        if rows:
            console.print(metrics_table(rows, f"by {key}", strata=True, level=result.confidence))
    for e in result.cases.excluded:
        console.print(f"[yellow]excluded {escape(e.id)}: {escape(e.reason)}[/yellow]", highlight=False)


@click.command("compare")
@click.argument("base", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("candidate", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--json", "json_out", type=click.Path(path_type=Path, dir_okay=False), help="Write the comparison here.")
@click.option("--html", "html_out", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the comparison as a self-contained HTML page here (new failures first).")
@click.option("--allow-changed-cases", is_flag=True,
              help="Compare runs of different suites on the cases whose content (and domain) is unchanged.")
@click.option("--by", multiple=True, help="Per-stratum results for this tag (repeatable; also split, group).")
@click.option("--interval", "interval", type=click.Choice(["t", "bca"]), default="t", show_default=True,
              help="t: t-interval over cases (Tango's score interval for 0/1 metrics), consistent with the reported "
                   "test — the default, see docs/design/004-paired-intervals.md; bca: the paired BCa bootstrap.")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True,
              help="Bootstrap seed ≥ 0 (used with --interval bca).")
@click.option("--confidence", type=FiniteFloat(0.5, 0.999), default=0.95, show_default=True,
              help="Level of the two-sided intervals.")
@click.option("--quiet", "-q", is_flag=True, help="No tables (use with --json).")
def compare(base: Path, candidate: Path, json_out: Path | None, allow_changed_cases: bool, by: tuple[str, ...],
            interval: str, seed: int, confidence: float, quiet: bool, html_out: Path | None = None) -> None:
    """Compare CANDIDATE with BASE (two run folders of the same suite), case by case."""
    result = compare_folders(base, candidate, allow_changed_cases=allow_changed_cases, by=by, seed=seed,
                          interval=interval,  # type: ignore[arg-type]
                          confidence=confidence)
    if json_out is not None:
        write_comparison(json_out, result)
    if html_out is not None:
        from passhat.report.html import render_compare_html

        write_atomic(html_out, render_compare_html(result))
    if not quiet:
        print_comparison(result, Console())
