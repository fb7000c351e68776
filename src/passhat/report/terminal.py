"""Terminal tables: per case c/n, Wilson interval and pass^k; the suite curve with intervals."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from passhat.metric_names import METRICS, SYMBOLS, shown_ks
from passhat.report.headline import headline
from passhat.rounding import interval

if TYPE_CHECKING:
    from passhat.models import CaseSummary, Interval, StratumSummary, Summary


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _ci(entry: Interval | None) -> str:
    if entry is None or entry.estimate is None or entry.ci_low is None or entry.ci_high is None:
        return "—"
    return f"{entry.estimate:.3f} {interval(entry.ci_low, entry.ci_high)}"


MAX_CASE_ROWS = 60
"""Above this many cases the table lists the least reliable ones: rich lays out 10,000 rows in ≈ 7 s, and
nobody reads them in a terminal; every case is in summary.json and the HTML report."""


def _rows(cases: list[CaseSummary]) -> tuple[list[CaseSummary], str]:
    """The cases to list and a caption saying what was left out."""
    if len(cases) <= MAX_CASE_ROWS:
        return cases, ""
    shaky = [c for c in cases if not c.passed_every_trial]
    shaky.sort(key=lambda c: (c.successes / c.n if c.n else -1.0, c.id))
    shown = shaky[:MAX_CASE_ROWS]
    return shown, (f"the {len(shown)} least reliable of {len(cases)} cases ({len(cases) - len(shaky)} pass every "
                   "trial); every case is in summary.json and report.html")


MAX_CHECK_CHARS = 100
"""A failing check longer than this (a traceback, a long diff) is cut in the table, which points to its record."""


def check_cell(case: CaseSummary, limit: int = MAX_CHECK_CHARS) -> str:
    """The case's first failing check on one line: cut at its first line break or ``limit`` characters,
    with a pointer to the trial whose record holds it whole."""
    text = case.top_failure or ""
    first = text.strip().splitlines()[0] if text.strip() else ""
    if first == text and len(text) <= limit:
        return text
    trial = case.top_failure_trial
    where = f" [whole text: trial {trial} in trials.jsonl]" if trial is not None else " [whole text in trials.jsonl]"
    return (first if len(first) <= limit else first[: limit - 1]) + "…" + where


def case_table(summary: Summary) -> Table:
    """One line per case: ids whole, the failing check cut to one line (``check_cell``)."""
    suite = summary.suite
    n = suite.trials_per_case
    ks = shown_ks(n)
    rows, caption = _rows(summary.cases)
    table = Table(title=f"{suite.name} · agent {summary.agent} · {suite.cases} cases × {n} trials",
                  caption=caption or None)
    table.add_column("case", no_wrap=True, min_width=max((len(c.id) for c in rows), default=4))
    table.add_column("c/n", justify="right", no_wrap=True)
    table.add_column("err", justify="right", no_wrap=True)
    table.add_column("Wilson 95%", justify="right", no_wrap=True)
    for k in ks:
        table.add_column(f"pass^{k}", justify="right", no_wrap=True)
    # the one column rich may shrink (not no_wrap); each cell stays one line, cut with "…" (the Text's own
    # no_wrap): with every column no_wrap, a narrow terminal squeezed c/n and pass^k to nothing instead
    table.add_column("first failing check", overflow="ellipsis")
    for c in rows:
        style = "green" if c.passed_every_trial else ("red" if c.successes == 0 else "yellow")
        wil = "—" if c.wilson_low is None or c.wilson_high is None else interval(c.wilson_low, c.wilson_high)
        table.add_row(
            Text(c.id), f"{c.successes}/{c.n}", str(c.errors or ""), wil,
            *(_fmt(c.pass_hat_k.get(k)) for k in ks), Text(check_cell(c), no_wrap=True, overflow="ellipsis"), style=style,
        )
    return table


def fit_width(console: Console, table: Table) -> None:
    """Outside a terminal (a CI log, a file), widen the console to the table's natural width, so no id is cut
    and no row wraps: nobody resizes a log. A terminal keeps its width (the checks shrink, the ids do not),
    and so does a width asked for with ``COLUMNS`` (rich reads it; shells do not export it on their own)."""
    if console.is_terminal or os.environ.get("COLUMNS", "").strip().isdigit():
        return
    natural = console.measure(table, options=console.options.update(width=10_000)).maximum
    console.width = max(console.width, natural)


def curve_table(block: StratumSummary, n: int, title: str) -> Table:
    ks = shown_ks(n)
    curve = Table(title=title)
    curve.add_column("metric")
    for k in ks:
        curve.add_column(f"k={k}", justify="right")
    for metric in METRICS:
        values = getattr(block, metric)
        curve.add_row(SYMBOLS[metric], *(_ci(values.get(k)) for k in ks))
    return curve


def experience_line(block: StratumSummary) -> str:
    e = block.experience
    parts = []
    if e.latency_s:
        parts.append(f"latency P50 {e.latency_s.p50:.2f}s P95 {e.latency_s.p95:.2f}s")
    if e.ttft_s:
        parts.append(f"TTFT P50 {e.ttft_s.p50:.2f}s P95 {e.ttft_s.p95:.2f}s")
    if e.steps_per_trial:
        parts.append(f"steps/trial {e.steps_per_trial.mean:.1f}")
    if e.total_cost:  # no model was priced (reference agents, unpriced models): "total cost 0.0000" is noise
        parts.append(f"total cost {e.total_cost:.4f}")
        if e.cost_per_success is not None:
            parts.append(f"cost/success {e.cost_per_success:.4f}")
    return " · ".join(parts)


def unapplied_fault_lines(summary: Summary) -> list[str]:
    """Planned faults that changed nothing in some trials (``fault_not_applied``): those trials did not test
    them, whatever the case table says."""
    rows = [f"  {c.id}: {why} ({k} of {c.n + c.errors} trial(s))"
            for c in summary.cases for why, k in c.faults_not_applied.items()]
    if not rows:
        return []
    return [f"warning: {len(rows)} planned fault(s) did not apply in some trials, which therefore did not test them:",
            *rows]


def unreached_fault_lines(summary: Summary) -> list[str]:
    """Planned faults that no call reached in some graded trials (``faults_not_reached``): the agent never made
    the call they were planned on, so those trials did not test them, whatever the case table says."""
    rows = [f"  {c.id}: {fault} ({k} of {c.n} graded trial(s))"
            for c in summary.cases for fault, k in c.faults_not_reached.items()]
    if not rows:
        return []
    return [f"warning: {len(rows)} planned fault(s) were never reached in some trials (no call got to them), which "
            "therefore did not test them:", *rows]


def print_summary(summary: Summary, console: Console | None = None, *, strata: Sequence[str] | None = None) -> None:
    """Print the case table, the suite curve with 95 % intervals, strata and experience figures.

    ``strata`` limits the strata printed to those keys (default: every stratum in the summary)."""
    console = console or Console()
    suite = summary.suite
    n = suite.trials_per_case
    print_headline(summary, console)
    cases = case_table(summary)
    fit_width(console, cases)
    console.print(cases)
    console.print(curve_table(suite, n, f"suite: mean over {suite.cases} cases; {suite.confidence:.0%} Gaffke interval, "
                                       "ends rounded outwards"))
    console.print(experience_line(suite), highlight=False)
    for key, values in summary.strata.items():
        if strata is not None and key not in strata:
            continue
        for value, block in values.items():
            console.print(curve_table(block, n, f"{key} = {value} ({block.cases} cases)"))
    for line in [*unapplied_fault_lines(summary), *unreached_fault_lines(summary)]:
        console.print(line, highlight=False, markup=False, style="yellow")
    if suite.errors:
        console.print(f"[yellow]{suite.errors} trial(s) ended in infrastructure errors "
                      "(not counted as pass or fail; see trials.jsonl)[/yellow]")
    # no note on which interval method applied: it changes no decision (each interval's `method` is in
    # summary.json, and docs/statistics.md says when the pseudo-case interval stands alone)


def print_headline(summary: Summary, console: Console) -> None:
    """The run in one sentence (``report.headline``), and where its figures are defined."""
    line = headline(summary)
    console.print(Text(line.text, style="bold"), soft_wrap=True)
    console.print(Text(line.pointer(), style="dim"), soft_wrap=True)
