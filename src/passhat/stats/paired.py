"""Comparing two versions on the same cases: paired differences, McNemar mid-p, MDE and Holm.

Pairing removes the between-task variance both versions share (Miller 2024, recommendation 4), so the
comparison is made on per-case differences d_t = cand_t − base_t (statistics.md §4), with the
interval from the same task-level BCa as ``bootstrap`` (Koehn 2004; Dror et al. 2018).

Fallbacks for the interval of the mean difference (after BCa and the t-interval of ``bootstrap``):
``"wilson_no_difference"`` when every difference is 0 — no unit disagreed, and since |d| ≤ 1,
|mean d| ≤ P(d ≠ 0) ≤ the Wilson upper bound for 0 disagreeing units out of U, so the interval is ±
that bound (a rule of three, not a false [0, 0]); ``"wilson_bounded"`` for other spread-free
differences in [−1, 1] (Wilson on (d + 1)/2 with n = U, mapped back); ``"degenerate"`` otherwise.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri
from scipy.stats import binom, ttest_rel
from scipy.stats import t as student_t

from passhat.stats._resample import cluster_se, resampling_units, unit_totals
from passhat.stats.bootstrap import _SE_TOL, IntervalMethod, resampled_intervals
from passhat.stats.intervals import wilson_score


@dataclass(frozen=True)
class PairedResult:
    """Candidate minus baseline on the same cases."""

    delta: float
    """Mean of cand − base over cases (positive: the candidate scores higher)."""
    low: float
    """Lower bound of the two-sided interval for the mean difference."""
    high: float
    """Upper bound of the two-sided interval for the mean difference."""
    method: IntervalMethod
    """How the interval was computed; ``"bca"`` unless a fallback in the module docstring applied."""
    confidence: float
    """Two-sided confidence level of [low, high]."""
    p_value: float | None
    """Two-sided paired t-test of mean difference 0: ``ttest_rel`` per case, or clustered by group.
    1.0 when every difference is 0; None when undefined (one unit, or a constant non-zero difference)."""
    correlation: float | None
    """Pearson correlation of base and cand across cases; None if fewer than 2 cases or one is constant."""
    sd_diff: float | None
    """Sample SD (ddof = 1) of per-case differences, the σ_d of ``minimum_detectable_effect``."""
    n_cases: int
    """Number of paired cases."""
    n_units: int
    """Independent resampling units (groups plus ungrouped cases)."""


def paired_difference(
    base: Sequence[float],
    cand: Sequence[float],
    groups: Sequence[str | None] | None = None,
    *,
    seed: int,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> PairedResult:
    """Mean difference cand − base with a paired BCa interval (resampling cases, or groups, together).

    The p-value is ``scipy.stats.ttest_rel(cand, base)`` without groups; with groups it is the same t
    statistic with the cluster-robust SE and U − 1 degrees of freedom, which equals ``ttest_rel``
    when every group is a single case (statistics.md §2: cluster on the unit of randomisation).
    """
    a, b = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"base and cand must be non-empty and of equal length, got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("base and cand must be finite; drop cases missing in either version first")
    d = b - a
    (interval,) = resampled_intervals(
        d.reshape(-1, 1),
        groups,
        seed=seed,
        confidence=confidence,
        n_resamples=n_resamples,
        batch=None,
        last_resort=_difference_fallback,
    )
    return PairedResult(
        delta=interval.estimate,
        low=interval.low,
        high=interval.high,
        method=interval.method,
        confidence=confidence,
        p_value=_p_value(a, b, d, groups),
        correlation=_pearson(a, b),
        sd_diff=float(np.std(d, ddof=1)) if d.size >= 2 else None,
        n_cases=interval.n_cases,
        n_units=interval.n_units,
    )


def _p_value(
    a: np.ndarray, b: np.ndarray, d: np.ndarray, groups: Sequence[str | None] | None
) -> float | None:
    if np.all(d == 0):
        return 1.0
    units = resampling_units(groups, d.size)
    sums, counts = unit_totals(d.reshape(-1, 1), units)
    n_units = sums.shape[0]
    se = float(cluster_se(sums, counts)[0])
    if n_units < 2 or not se > _SE_TOL:
        return None
    if groups is None:
        return float(ttest_rel(b, a).pvalue)
    return float(2 * student_t.sf(abs(float(d.mean()) / se), n_units - 1))


def _pearson(a: np.ndarray, b: np.ndarray) -> float | None:
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def _difference_fallback(
    column: np.ndarray, units: np.ndarray, estimate: float, n_units: int, confidence: float
) -> tuple[tuple[float, float], IntervalMethod]:
    if np.all(column == 0):
        bound = wilson_score(0.0, n_units, confidence)[1]
        return (-bound, bound), "wilson_no_difference"
    if column.min() >= -1.0 and column.max() <= 1.0:
        low, high = wilson_score(min(1.0, max(0.0, (estimate + 1) / 2)), n_units, confidence)
        return (2 * low - 1, 2 * high - 1), "wilson_bounded"
    return (estimate, estimate), "degenerate"


def mcnemar_midp(b: int, c: int) -> float:
    """Mid-p McNemar test for one trial per case: b = base passes/cand fails, c = base fails/cand passes.

    p = 2·[P(X ≤ min(b, c)) − ½·P(X = min(b, c))], X ~ Bin(b + c, ½), capped at 1. Fagerland, Lydersen
    & Laake (2013, BMC Med Res Methodol 13:91) recommend it over the exact conditional test, which is
    conservative (statistics.md §4): b = 3, c = 12 gives 0.0213 (exact: 0.0352). No discordant pairs
    (b + c == 0) is no evidence of a difference: 1.0.
    """
    b, c = operator.index(b), operator.index(c)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    low = min(b, c)
    p = 2 * (binom.cdf(low, b + c, 0.5) - 0.5 * binom.pmf(low, b + c, 0.5))
    return float(min(1.0, p))


def minimum_detectable_effect(
    sd_diff: float, n: int, alpha: float = 0.05, power: float = 0.8, two_sided: bool = True
) -> float:
    """Smallest true mean difference detected with the given power: (z_{1−α/2} + z_{1−β})·σ_d/√n.

    Source: Miller 2024 §5, statistics.md §2 (σ_d = 0.25, n = 100 → 0.070). Report it with every
    "no change" result. ``two_sided=False`` uses z_{1−α}, matching a one-sided gate.
    """
    n = operator.index(n)
    if n < 1 or sd_diff < 0 or not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(
            f"need n >= 1, sd_diff >= 0, alpha and power in (0, 1); got {n}, {sd_diff}, {alpha}, {power}"
        )
    z_alpha = float(ndtri(1 - alpha / 2 if two_sided else 1 - alpha))
    return (z_alpha + float(ndtri(power))) * sd_diff / math.sqrt(n)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in input order: reject H_i at level α iff adjusted_i ≤ α.

    Sorted ascending, the j-th (1-based) of m becomes max over i ≤ j of min(1, (m − i + 1)·p_(i)), so
    adjusted values are monotone in the raw ones and capped at 1 (Holm 1979; statistics.md §4: Holm
    for gate decisions across strata). Controls the family-wise error rate under any dependence.
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1 or np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError("pvalues must be a flat sequence of numbers in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted.tolist()
