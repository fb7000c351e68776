"""Candidate versus baseline on production outcomes: rate differences, P95 latency and cost per success.

Rates (success, handoff, error) are independent binomial samples, so their difference gets Newcombe's
hybrid score interval: it keeps Wilson's good coverage near 0 and 1 where the Wald interval fails, and
needs no resampling. Latency P95 and cost per success have no such closed form, so they get a seeded
percentile bootstrap that resamples each version's records independently.

The decision is on the overall success rate only (segments are reported, not gated: many segments
would multiply the chances of a false FAIL).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from passhat.canary.records import OUTCOMES, OutcomeRecord
from passhat.stats.intervals import wilson

Decision = Literal["PASS", "FAIL", "INCONCLUSIVE"]
"""PASS: the success rate dropped by less than the allowed drop; FAIL: by more; INCONCLUSIVE: can't tell."""

_MAX_BATCH_CELLS = 4_000_000
"""Resamples per batch × records: bounds the index matrix to ≈ 32 MB."""


@dataclass(frozen=True)
class RateDifference:
    """A rate in each version and the difference candidate − baseline with Newcombe's interval."""

    baseline: float
    """Rate in the baseline (count / records)."""
    candidate: float
    """Rate in the candidate."""
    difference: float
    """candidate − baseline."""
    low: float
    """Lower bound of the two-sided interval for the difference."""
    high: float
    """Upper bound."""
    counts: tuple[int, int, int, int]
    """(baseline count, baseline records, candidate count, candidate records)."""


@dataclass(frozen=True)
class MetricDifference:
    """A measurement in each version, and candidate − baseline (or ÷) with a percentile-bootstrap interval."""

    baseline: float
    """The statistic in the baseline."""
    candidate: float
    """The statistic in the candidate."""
    estimate: float
    """candidate − baseline, or candidate / baseline for a ratio."""
    low: float
    """Lower bound (the α/2 quantile of the resampled estimates)."""
    high: float
    """Upper bound (the 1 − α/2 quantile)."""
    resamples_used: int
    """Resamples that gave a value: for cost per success, those in which both versions had a success."""


@dataclass(frozen=True)
class SegmentComparison:
    """Every comparison for one set of records (all of them, or one segment)."""

    segment: str | None
    """The segment; None for all records."""
    n_baseline: int
    """Baseline records."""
    n_candidate: int
    """Candidate records."""
    rates: dict[str, RateDifference | None]
    """Outcome → its rate difference; None when a version has no records here."""
    latency_p95: MetricDifference | None
    """P95 latency (s), candidate − baseline; None when a version has no records here."""
    cost_per_success_ratio: MetricDifference | None
    """Σ cost / successes, candidate ÷ baseline; None without a cost on every record or without successes."""
    cost_per_success_difference: MetricDifference | None
    """Σ cost / successes, candidate − baseline; None as for the ratio."""


@dataclass(frozen=True)
class CanaryResult:
    """The comparison overall and per segment, and the decision on the overall success rate."""

    overall: SegmentComparison
    """All records."""
    segments: list[SegmentComparison]
    """One per segment label found in either file, sorted by label."""
    decision: Decision
    """From :func:`decide` on ``overall.rates["success"]``."""
    max_drop: float
    """The allowed drop of the success rate (0.02: two points)."""
    confidence: float
    """Two-sided confidence of every interval."""
    seed: int
    """Seed of the bootstrap."""
    versions: dict[str, list[str]] = field(default_factory=dict)
    """``"baseline"``/``"candidate"`` → the version labels found in that file."""


def newcombe_difference(x1: int, n1: int, x2: int, n2: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """(p1 − p2, low, high): Newcombe's hybrid score interval for a difference of independent proportions.

    Method 10 of Newcombe (1998), "Interval estimation for the difference between independent
    proportions: comparison of eleven methods", Statistics in Medicine 17:873–890. With (l_i, u_i) the
    Wilson score interval of p_i = x_i/n_i:

        low  = (p1 − p2) − √((p1 − l1)² + (u2 − p2)²)
        high = (p1 − p2) + √((u1 − p1)² + (p2 − l2)²)

    Why this one: it combines each arm's Wilson interval, so it inherits Wilson's coverage near 0 and 1
    (where production success and error rates live) and never leaves [−1, 1]; Newcombe found its
    coverage close to nominal over the whole parameter space. Example (Newcombe's Table II): 56/70 vs
    48/80 → 0.2000, (0.0524, 0.3339). Both n must be ≥ 1.
    """
    if n1 < 1 or n2 < 1:
        raise ValueError(f"need at least one record in each group, got n1={n1}, n2={n2}")
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson(x1, n1, confidence)
    l2, u2 = wilson(x2, n2, confidence)
    d = p1 - p2
    return d, d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2)


def decide(low: float, high: float, max_drop: float) -> Decision:
    """PASS when the interval rules out a drop of ``max_drop`` or more; FAIL when it rules out less.

    On a 95 % two-sided interval each verdict is a one-sided test at α = 2.5 %: with the true drop exactly
    ``max_drop``, PASS and FAIL each come out at most about 2.5 % of the time.
    """
    if low > -max_drop:
        return "PASS"
    if high < -max_drop:
        return "FAIL"
    return "INCONCLUSIVE"


def compare_canary(baseline: Sequence[OutcomeRecord], candidate: Sequence[OutcomeRecord], *, max_drop: float,
                   seed: int = 0, confidence: float = 0.95, n_resamples: int = 2000) -> CanaryResult:
    """Compare ``candidate`` with ``baseline`` overall and per segment, and decide on the success rate.

    Same records in the same order and the same seed → the same result.
    """
    if not 0 <= max_drop < 1:
        raise ValueError(f"max_drop must be in [0, 1), got {max_drop}")
    if not baseline or not candidate:
        raise ValueError("need at least one record in each version")
    rng = np.random.default_rng(seed)

    def compare(segment: str | None) -> SegmentComparison:
        b = [r for r in baseline if segment is None or r.segment == segment]
        c = [r for r in candidate if segment is None or r.segment == segment]
        return _compare(segment, b, c, rng, confidence, n_resamples)

    overall = compare(None)
    labels = sorted({r.segment for r in (*baseline, *candidate) if r.segment is not None})
    success = overall.rates["success"]
    assert success is not None
    return CanaryResult(overall, [compare(s) for s in labels], decide(success.low, success.high, max_drop),
                        max_drop, confidence, seed,
                        {"baseline": sorted({r.version for r in baseline}),
                         "candidate": sorted({r.version for r in candidate})})


def _compare(segment: str | None, b: list[OutcomeRecord], c: list[OutcomeRecord], rng: np.random.Generator,
             confidence: float, n_resamples: int) -> SegmentComparison:
    if not b or not c:
        return SegmentComparison(segment, len(b), len(c), dict.fromkeys(OUTCOMES), None, None, None)
    rates: dict[str, RateDifference | None] = {}
    for outcome in OUTCOMES:
        xb, xc = sum(r.outcome == outcome for r in b), sum(r.outcome == outcome for r in c)
        d, low, high = newcombe_difference(xc, len(c), xb, len(b), confidence)
        rates[outcome] = RateDifference(xb / len(b), xc / len(c), d, low, high, (xb, len(b), xc, len(c)))
    latency = _bootstrap(_columns(b, "latency"), _columns(c, "latency"), _p95, np.subtract, rng, confidence,
                         n_resamples)
    ratio = difference = None
    if all(r.cost is not None for r in (*b, *c)) and any(r.outcome == "success" for r in b) and \
            any(r.outcome == "success" for r in c):
        cb, cc = _columns(b, "cost"), _columns(c, "cost")
        ratio = _bootstrap(cb, cc, _cost_per_success, np.divide, rng, confidence, n_resamples)
        difference = _bootstrap(cb, cc, _cost_per_success, np.subtract, rng, confidence, n_resamples)
    return SegmentComparison(segment, len(b), len(c), rates, latency, ratio, difference)


def _columns(records: list[OutcomeRecord], what: str) -> np.ndarray:
    """records × 2: (latency, 0) for latency; (cost, 1 if success) for cost per success."""
    if what == "latency":
        return np.array([(r.latency_s, 0.0) for r in records])
    return np.array([(r.cost or 0.0, float(r.outcome == "success")) for r in records])


def _p95(sample: np.ndarray) -> np.ndarray:
    """P95 of column 0 of each resample (resamples × records × 2), numpy's linear interpolation as in
    ``stats.describe.percentile``."""
    return np.percentile(sample[..., 0], 95, axis=-1)


def _cost_per_success(sample: np.ndarray) -> np.ndarray:
    """Σ cost / successes of each resample; NaN where a resample drew no success."""
    successes = sample[..., 1].sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(successes > 0, sample[..., 0].sum(axis=-1) / successes, np.nan)


def _bootstrap(b: np.ndarray, c: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray],
               combine: Callable[[np.ndarray, np.ndarray], np.ndarray], rng: np.random.Generator, confidence: float,
               n_resamples: int) -> MetricDifference:
    """Percentile bootstrap of combine(statistic(candidate), statistic(baseline)), each version resampled
    on its own (they are independent samples). Resamples where the statistic is undefined are left out
    and counted in ``resamples_used``; so are those out of float range (a ratio to a zero-cost baseline, a
    resample drawing the costliest record many times), so numpy's warnings about them are not shown."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        sb, sc = float(statistic(b[None])[0]), float(statistic(c[None])[0])
        values = np.concatenate([combine(_resampled(c, statistic, rng, n), _resampled(b, statistic, rng, n))
                                 for n in _batches(n_resamples, max(len(b), len(c)))])
        estimate = float(combine(np.array(sc), np.array(sb)))
    values = values[np.isfinite(values)]
    if values.size == 0:
        return MetricDifference(sb, sc, estimate, math.nan, math.nan, 0)
    alpha = 1 - confidence
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return MetricDifference(sb, sc, estimate, float(low), float(high), int(values.size))


def _resampled(data: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], rng: np.random.Generator,
               n: int) -> np.ndarray:
    return statistic(data[rng.integers(0, len(data), size=(n, len(data)))])


def _batches(n_resamples: int, n_records: int) -> list[int]:
    size = max(1, min(n_resamples, _MAX_BATCH_CELLS // max(1, n_records)))
    return [min(size, n_resamples - start) for start in range(0, n_resamples, size)]
