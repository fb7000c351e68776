"""Task-level intervals for a suite mean: the union of a seeded BCa over tasks and the pseudo-case interval.

The task is the unit of inference (statistics.md §0.3, §3.3): resample tasks with replacement, each
keeping all its trials. Tasks sharing a ``group`` (family, template) are resampled together and the
statistic is Σ values in the drawn groups / number of cases in them — the clustered bootstrap, which
widens the interval when a family passes or fails as one.

BCa alone is too sure of itself where the sample cannot show the population's spread: near the
ceiling (20 cases × 16 trials, 80 % always passing: coverage 0.83) and over a few families (4 of 5
cases: 0.78). The pseudo-case interval (``stats.pseudocase``: one pseudo-pass and one pseudo-fail added
to the cases) covers there, and BCa covers where the sample's spread is all there is. The reported
interval is their union, so it covers wherever either does: ≥ 0.94 in every ceiling, family and middle
regime of ``bench/bench_coverage.py`` (design note 006).

Per column (U = resampling units with a value in that column):

1. ``"bca_pseudocase"``: the union of BCa and the pseudo-case interval when U ≥ 2, the values are not all
   equal and BCa gives finite bounds.
2. ``"pseudocase"``: the pseudo-case interval alone otherwise — every case at 1 (or 0, or 7/8), a single
   unit, or a BCa numerical edge. With every value 1 the upper bound is exactly 1 and the lower bound is
   (α/2)^{1/(U+1)}; a suite with a case below 1 never gets a higher one: more evidence never lowers it.

Per-case values must lie in [0, 1] (pass^k, pass@k, shares), so every bound does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from passhat.stats._resample import bca_ratio, resampling_units, unit_totals
from passhat.stats.pseudocase import pseudocase_interval

IntervalMethod = Literal["bca_pseudocase", "t_pseudocase", "tango_pseudocase", "pseudocase"]
"""How an interval was obtained: a method's interval united with the pseudo-case interval, or the latter
alone where the method has no spread to work with; see the module docstrings of ``bootstrap``, ``paired``
and ``pseudocase``."""


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval and how it was computed."""

    estimate: float
    """Unweighted mean over the cases that have a value (groups do not reweight cases)."""
    low: float
    """Lower bound. A one-sided (1 − α) bound is the two-sided bound at confidence 1 − 2α."""
    high: float
    """Upper bound."""
    method: IntervalMethod
    """``"bca_pseudocase"`` normally; ``"pseudocase"`` where BCa has no spread to resample (module docstring)."""
    confidence: float
    """Two-sided confidence level, e.g. 0.95."""
    n_cases: int
    """Cases that contributed a value (NaN cells are excluded)."""
    n_units: int
    """Independent resampling units: groups plus ungrouped cases."""


def suite_interval(
    values: Sequence[float],
    groups: Sequence[str | None] | None = None,
    *,
    seed: int,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> Interval:
    """Interval for the mean of per-case values (e.g. per-task pass^k), resampling cases or their groups.

    Same seed, same inputs (in the same order) → same interval. See the module docstring for fallbacks.
    """
    matrix = np.asarray(values, dtype=float).reshape(-1, 1)
    return suite_intervals(matrix, groups, seed=seed, confidence=confidence, n_resamples=n_resamples)[0]


def suite_intervals(
    matrix: np.ndarray,
    groups: Sequence[str | None] | None = None,
    *,
    seed: int,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    batch: int | None = None,
) -> list[Interval]:
    """One interval per column of a cases × columns matrix (e.g. k = 1..16), all from the SAME resamples.

    Sharing resample indices keeps the bootstrap curves coherent: in every resample pass^k is
    non-increasing and pass@k non-decreasing in k (statistics.md §3.3). NaN marks a case excluded from
    a column (n_t < k); each column averages its own cases. ``batch`` bounds memory (resamples per
    step); the default keeps the count matrix near 32 MB.
    """
    return resampled_intervals(
        matrix,
        groups,
        seed=seed,
        confidence=confidence,
        n_resamples=n_resamples,
        batch=batch,
    )


_SE_TOL = 1e-12
"""Below this a cluster SE is rounding residue of identical unit means, not spread."""


def resampled_intervals(
    matrix: np.ndarray,
    groups: Sequence[str | None] | None,
    *,
    seed: int,
    confidence: float,
    n_resamples: int,
    batch: int | None,
) -> list[Interval]:
    """Rules 1–2 of the module docstring for every column, all BCa columns on the same resamples."""
    values = _check_matrix(matrix, confidence, n_resamples)
    units = resampling_units(groups, values.shape[0])
    sums, counts = unit_totals(values, units)
    rng = np.random.default_rng(seed)
    _, low, high, _ = bca_ratio(sums, counts, rng=rng, confidence=confidence, n_resamples=n_resamples, batch=batch)
    j_low, j_high = pseudocase_interval(sums, counts, confidence)
    n_units = (counts > 0).sum(axis=0)
    out = []
    for j in range(values.shape[1]):
        column = values[~np.isnan(values[:, j]), j]
        # fsum: the reported mean must not depend on how many columns were batched together.
        est = math.fsum(column) / len(column)
        method: IntervalMethod
        if n_units[j] >= 2 and column.min() != column.max() and math.isfinite(low[j]) and math.isfinite(high[j]):
            bounds, method = (min(float(low[j]), float(j_low[j])), max(float(high[j]), float(j_high[j]))), "bca_pseudocase"
        else:
            bounds, method = (float(j_low[j]), float(j_high[j])), "pseudocase"
        out.append(Interval(est, *bounds, method, confidence, len(column), int(n_units[j])))
    return out


Direction = Literal["non_increasing", "non_decreasing"]
"""How a curve's truth moves with k: pass^k is non-increasing in k, pass@k non-decreasing."""


def coherent_curve(intervals: Sequence[Interval], direction: Direction) -> list[Interval]:
    """Intervals for k = 1, 2, … made coherent: each contains its estimate, and both bounds move with k as the truth does.

    Two steps, each of which only widens an interval, so no interval covers less than before:

    1. clamp: low ≤ estimate ≤ high (with 1–3 families BCa ∪ pseudo-case could exclude its own estimate);
    2. envelope, for a non-increasing curve (pass^k): low_k ← min_{j ≤ k} low_j and
       high_k ← max_{j ≥ k} high_j. Both are non-increasing in k by construction, and
       low_k' ≤ low_k, high_k' ≥ high_k, so whenever [low_k, high_k] covers θ_k so does the new one.
       A non-decreasing curve (pass@k) is the mirror image.

    Step 1 before step 2 keeps the estimate inside (the envelope only moves bounds outwards). The
    estimates themselves are left alone: with cases excluded for large k (n_t < k) they need not be
    monotone, and the bounds are the claim (issue 22; not yet measured by simulation).
    """
    clamped = [replace(iv, low=min(iv.low, iv.estimate), high=max(iv.high, iv.estimate)) for iv in intervals]
    lows, highs = [iv.low for iv in clamped], [iv.high for iv in clamped]
    if direction == "non_increasing":
        lows = list(np.minimum.accumulate(lows))
        highs = list(np.maximum.accumulate(highs[::-1])[::-1])
    else:
        lows = list(np.minimum.accumulate(lows[::-1])[::-1])
        highs = list(np.maximum.accumulate(highs))
    return [replace(iv, low=float(lo), high=float(hi)) for iv, lo, hi in zip(clamped, lows, highs, strict=True)]


def _check_matrix(matrix: np.ndarray, confidence: float, n_resamples: int) -> np.ndarray:
    values = np.asarray(matrix, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"matrix must be 2-D (cases × columns), got shape {values.shape}")
    if values.shape[0] == 0 or values.shape[1] == 0:
        raise ValueError(f"matrix needs at least one case and one column, got shape {values.shape}")
    if np.isinf(values).any():
        raise ValueError("values must be finite (use NaN to exclude a case from a column)")
    if (values < 0).any() or (values > 1).any():
        raise ValueError("per-case values must lie in [0, 1] (pass^k, pass@k or a share)")
    empty = np.flatnonzero(np.isnan(values).all(axis=0))
    if empty.size:
        raise ValueError(f"column(s) {empty.tolist()} have no values: every case is NaN")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    return values
