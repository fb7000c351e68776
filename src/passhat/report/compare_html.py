"""The comparison page (``passhat compare --html FILE``): new failures first, then the paired evidence.

Input is the :class:`~passhat.models.Comparison` ``passhat compare`` builds. It lists only the cases whose verdict
changed, so the paired per-case table (every compared case, base beside candidate) is read from the two
run folders it names; when a folder is gone the page still shows the changes and the statistics.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from passhat.errors import PasshatError
from passhat.metric_names import METRICS, key_label, parse_metric_key
from passhat.models import Comparison, Interval, PairedMetric
from passhat.report import figures
from passhat.results.tally import CaseTally, tally
from passhat.runner.store import RunStore


def _tallies(folder: str | None) -> tuple[dict[str, CaseTally], list[str]] | None:
    if not folder or not Path(folder).is_dir():
        return None
    store = RunStore(Path(folder))
    try:
        cases = list(store.manifest().suite.cases)
    except PasshatError:
        return None
    return tally(store.iter_records(), cases), cases


def _rate(t: CaseTally | None) -> float | None:
    return t.passes / t.n if t is not None and t.n else None


@dataclass(frozen=True)
class PairedRow:
    """One compared case in the paired table: both runs' counts and pass^1, and what changed."""

    id: str
    base: str
    """``passes/graded`` in the base run."""
    candidate: str
    """``passes/graded`` in the candidate run."""
    base_rate: float | None
    cand_rate: float | None
    delta: float | None
    """``cand_rate − base_rate`` (None when a run has no graded trial)."""
    label: str
    """``new failure``, ``worse``, ``better``, ``new pass`` or ``same``."""
    reason: str | None
    """The candidate's commonest failing check."""
    category: str | None
    """The candidate's commonest failure category."""


ORDER = {"new failure": 0, "worse": 1, "better": 2, "new pass": 3, "same": 4}


def paired_rows(result: Comparison) -> list[PairedRow]:
    """Every compared case with both runs' c/n and pass^1, ordered new failures, worse, better, unchanged."""
    base, cand = _tallies(result.base.folder), _tallies(result.candidate.folder)
    if base is None or cand is None:
        return []
    excluded = {e.id for e in result.cases.excluded}
    new_failures, new_passes = set(result.new_failures), set(result.new_passes)
    rows = []
    for cid in cand[1]:
        if cid in excluded or cid not in base[0]:
            continue
        b, c = base[0][cid], cand[0][cid]
        rb, rc = _rate(b), _rate(c)
        delta = None if rb is None or rc is None else rc - rb
        label = ("new failure" if cid in new_failures else "new pass" if cid in new_passes
                 else "worse" if delta is not None and delta < 0 else "better" if delta and delta > 0 else "same")
        top = max(set(c.failure_reasons), key=c.failure_reasons.count) if c.failure_reasons else None
        rows.append(PairedRow(cid, f"{b.passes}/{b.n}", f"{c.passes}/{c.n}", rb, rc, delta, label, top,
                              max(c.categories, key=lambda k: c.categories[k]) if c.categories else None))
    return sorted(rows, key=lambda r: (ORDER[r.label], r.delta if r.delta is not None else 0.0, r.id))


def _delta(entry: PairedMetric | None) -> Interval | None:
    """A paired difference drawn like an interval: Δ with its bounds."""
    if entry is None:
        return None
    return Interval(estimate=entry.delta, ci_low=entry.ci_low, ci_high=entry.ci_high, method=entry.method)


@dataclass(frozen=True)
class StratumRow:
    """One line of a stratum's table."""

    value: str
    name: str
    metric: PairedMetric


def render(result: Comparison) -> str:
    """The comparison page as one self-contained HTML string."""
    from passhat.report.html import environment

    shown = {n: m for n, m in result.metrics.items() if n != "pass_at_1"}  # pass@1 is pass^1
    metrics = {key_label(n): m for n, m in shown.items()}
    hat, at = ([(key_label(n), _delta(m), None) for n, m in shown.items() if parse_metric_key(n)[0] == metric]
               for metric in METRICS)
    strata = []
    for key, values in result.strata.items():
        blocks = {value: block.metrics() for value, block in values.items()}
        names = sorted({n for found in blocks.values() for n in found}, key=lambda n: parse_metric_key(n)[1])
        rows = [(f"{value} ({values[value].cases})", _delta(found.get(names[0])) if names else None,
                 _delta(found.get(names[-1])) if len(names) > 1 else None) for value, found in blocks.items()]
        table = [StratumRow(value, key_label(n), found[n]) for value, found in blocks.items() for n in names if n in found]
        labels = (f"Δ {key_label(names[0])}", f"Δ {key_label(names[-1])}") if names else ("Δ", "Δ")
        strata.append({"key": key, "svg": figures.interval_svg(rows, lo=-1, hi=1, labels=labels), "rows": table})
    return environment().get_template("compare.html.j2").render(
        r=result, metrics=metrics, strata=strata, paired=paired_rows(result),
        hat_svg=figures.interval_svg(hat, lo=-1, hi=1, labels=("Δ", "Δ")) if hat else "",
        at_svg=figures.interval_svg(at, lo=-1, hi=1, labels=("Δ", "Δ")) if at else "",
    )
