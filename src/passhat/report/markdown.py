"""A Markdown summary for pull requests and ``$GITHUB_STEP_SUMMARY``: the gate, new failures, pass^k.

Order follows what a reviewer needs first: the run in one sentence (``report.headline``), the gate's
outcome and each rule's reason, then the cases that newly fail, then the reliability curve with its
intervals, then the cases that are not fully passing.
Every number carries its interval or its count; nothing here is a bare percentage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from passhat.metric_names import shown_ks
from passhat.report.headline import headline
from passhat.rounding import interval

if TYPE_CHECKING:
    from passhat.models import CaseChange, GateResult, Interval, SuiteSummary, Summary

ICONS = {"PASS": "✅", "FAIL": "❌", "INCONCLUSIVE": "⚠️", "SKIPPED": "⏭️"}
MAX_ROWS = 25


def _cell(text: Any, limit: int = 300) -> str:
    flat = str(text).replace("\n", " ")
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return flat.replace("|", "\\|")


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def _gate(gate: GateResult) -> list[str]:
    info = gate.gate
    lines = [f"### Gate `{info.name}`: {ICONS[gate.outcome]} {gate.outcome}", ""]
    if info.override:
        lines += [f"> [!CAUTION]\n> **Gate file changed after the run started** and was evaluated anyway "
                  f"(`--allow-gate-change`): registered sha256 `{info.override.registered_sha256[:12]}`, "
                  f"used `{info.override.used_sha256[:12]}`.", ""]
    elif not info.preregistered:
        lines += ["> [!WARNING]\n> This gate was **not pre-registered**: it was chosen after the run started.", ""]
    if gate.baseline:
        lines += [f"Baseline: `{gate.baseline.agent}` ({gate.baseline.compared_cases} paired cases).", ""]
    lines += ["| rule | outcome | value | bounds | bar | reason |", "|---|---|---|---|---|---|"]
    for r in gate.rules:
        bounds = "—" if r.low is None and r.high is None else f"[{_num(r.low)}, {_num(r.high)}]"
        lines.append(f"| {_cell(r.name)} | {ICONS[r.outcome]} {r.outcome} | {_num(r.value)} | {bounds} "
                     f"| {_num(r.bar)} | {_cell(r.reason)} |")
    return lines + [""]


def _new_failures(rows: list[CaseChange]) -> list[str]:
    if not rows:
        return ["**No new failures** against the baseline.", ""]
    lines = [f"### ❌ {len(rows)} new failure(s): passed every trial in the baseline, not now", "",
             "| case | baseline | now | most common failure |", "|---|---|---|---|"]
    lines += [f"| `{r.id}` | {r.base} | {r.candidate} | {_cell(r.reason or '')} |" for r in rows[:MAX_ROWS]]
    return lines + ([f"… and {len(rows) - MAX_ROWS} more"] if len(rows) > MAX_ROWS else []) + [""]


def _curve(suite: SuiteSummary) -> list[str]:
    pct = f"{suite.confidence:.0%}"
    lines = [f"### Reliability: mean over {suite.cases} cases, {pct} interval over cases "
             "(Gaffke's bounds, ends rounded outwards)", "",
             "| k | pass^k | pass@k |", "|---|---|---|"]
    for k in shown_ks(suite.trials_per_case):
        cells = []
        for curve in (suite.pass_hat_k, suite.pass_at_k):
            e = curve.get(k)
            cells.append("—" if e is None else f"{_fixed(e.estimate)} {_bounds(e)}")
        lines.append(f"| {k} | {cells[0]} | {cells[1]} |")
    return lines + [""]


def _bounds(e: Interval) -> str:
    return "[—, —]" if e.ci_low is None or e.ci_high is None else interval(e.ci_low, e.ci_high, 3)


def _fixed(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _failing(summary: Summary) -> list[str]:
    rows = [c for c in summary.cases if c.n and c.successes < c.n]
    if not rows:
        return ["Every case passed every graded trial.", ""]
    rows.sort(key=lambda c: c.successes / c.n)
    lines = [f"### {len(rows)} case(s) not fully passing", "", "| case | passed | first failing check |", "|---|---|---|"]
    lines += [f"| `{c.id}` | {c.successes}/{c.n} | {_cell(c.top_failure or '')} |" for c in rows[:MAX_ROWS]]
    return lines + ([f"… and {len(rows) - MAX_ROWS} more"] if len(rows) > MAX_ROWS else []) + [""]


def _footer(suite: SuiteSummary) -> list[str]:
    e = suite.experience
    parts = []
    if e.latency_s:
        parts.append(f"latency P50 {e.latency_s.p50:.2f} s, P95 {e.latency_s.p95:.2f} s")
    if e.cost_per_success is not None:
        parts.append(f"cost per success {e.cost_per_success:.4f}")
    if suite.errors:
        parts.append(f"**{suite.errors} infrastructure error(s)** (neither pass nor fail)")
    return [" · ".join(parts), ""] if parts else []


def markdown_summary(summary: Summary, gate: GateResult | None = None) -> str:
    """The Markdown for one run (and its gate result, whose baseline block lists new failures)."""
    suite = summary.suite
    head = f" — gate {ICONS[gate.outcome]} {gate.outcome}" if gate else ""
    line = headline(summary)
    lines = [f"## passhat: `{suite.name}` · agent `{summary.agent}`{head}", "",
             f"**{_cell(line.text, 2000)}**", "", f"<sub>{_cell(line.pointer(), 2000)}</sub>", "",
             f"{suite.cases} cases × {suite.trials_per_case} trials · suite `{suite.hash[:12]}`", ""]
    if gate:
        lines += _gate(gate)
        if gate.baseline:
            lines += _new_failures(gate.baseline.new_failures)
    lines += _curve(suite) + _failing(summary) + _footer(suite)
    return "\n".join(lines)
