"""Task-level intervals for a suite mean: seeded BCa over tasks (or task families), with honest fallbacks.

The task is the unit of inference (statistics.md §0.3, §3.3): resample tasks with replacement, each
keeping all its trials. Tasks sharing a ``group`` (family, template) are resampled together and the
statistic is Σ values in the drawn groups / number of cases in them — the clustered bootstrap, which
widens the interval when a family passes or fails as one. BCa is the default: at T = 30 it covered
0.948–0.954 against 0.926–0.940 for the t-interval (§3.3).

Fallback rules, applied per column when BCa cannot run or returns a non-finite bound (U = number of
resampling units with a value in that column):

1. ``"bca"`` when U ≥ 2 and the values are not all identical, and BCa gives finite bounds.
2. ``"t"``: U ≥ 2 and the cluster-robust SE is positive (BCa hit a numerical edge): estimate ±
   t_{U−1} · SE.
3. Values all in [0, 1]: Wilson score interval at p̂ = estimate with n = U.
   ``"wilson_fully_passing"`` when every value is 0 or 1 and each unit is uniform (in practice: all
   cases pass, or all fail) — then it is exactly Wilson on the fully-passing units out of U, the
   remedy for all-pass pass^k in §3.3. Groups count once: correlated cases are not independent
   evidence. Otherwise ``"wilson_bounded"`` (e.g. every task at 7/8, or a single task): a mean of U
   independent [0, 1] units has variance ≤ μ(1 − μ)/U (Bhatia–Davis), so the binomial worst case
   is a conservative interval where a t-interval would claim zero width.
4. ``"degenerate"``: [estimate, estimate] — only for values outside [0, 1] with no spread to use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.stats import t as student_t

from passhat.stats._resample import bca_ratio, cluster_se, resampling_units, unit_totals
from passhat.stats.intervals import wilson_score

IntervalMethod = Literal[
    "bca", "t", "tango_score", "wilson_fully_passing", "wilson_bounded", "wilson_no_difference", "degenerate"
]
"""How an ``Interval`` was obtained; see the module docstrings of ``bootstrap`` and ``paired``."""


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
    """``"bca"`` normally; anything else is a documented fallback and should be shown in reports."""
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
        last_resort=_wilson_fallback,
    )


LastResort = Callable[[np.ndarray, np.ndarray, float, int, float], tuple[tuple[float, float], IntervalMethod]]
"""(column values, their units, estimate, U, confidence) → (bounds, method), for when BCa and t cannot run."""

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
    last_resort: LastResort,
) -> list[Interval]:
    """Rules 1–2 of the module docstring for every column, then ``last_resort``; shared with ``paired``."""
    values = _check_matrix(matrix, confidence, n_resamples)
    units = resampling_units(groups, values.shape[0])
    sums, counts = unit_totals(values, units)
    rng = np.random.default_rng(seed)
    _, low, high, _ = bca_ratio(
        sums, counts, rng=rng, confidence=confidence, n_resamples=n_resamples, batch=batch
    )
    se = cluster_se(sums, counts)
    out = []
    for j in range(values.shape[1]):
        present = ~np.isnan(values[:, j])
        column, col_units = values[present, j], units[present]
        n_units = len(np.unique(col_units))
        # fsum: the reported mean must not depend on how many columns were batched together.
        est = math.fsum(column) / len(column)
        spread = column.min() != column.max()
        method: IntervalMethod
        if n_units >= 2 and spread and math.isfinite(low[j]) and math.isfinite(high[j]):
            bounds, method = (float(low[j]), float(high[j])), "bca"
        elif n_units >= 2 and spread and se[j] > _SE_TOL:
            half = float(student_t.ppf(0.5 + confidence / 2, n_units - 1)) * float(se[j])
            bounds, method = (est - half, est + half), "t"
        else:
            bounds, method = last_resort(column, col_units, est, n_units, confidence)
        out.append(Interval(est, *bounds, method, confidence, len(column), n_units))
    return out


def _wilson_fallback(
    column: np.ndarray, units: np.ndarray, estimate: float, n_units: int, confidence: float
) -> tuple[tuple[float, float], IntervalMethod]:
    """Rules 3–4 of the module docstring."""
    if column.min() < 0.0 or column.max() > 1.0:
        return (estimate, estimate), "degenerate"
    binary = bool(np.all((column == 0.0) | (column == 1.0)))
    uniform_units = all(np.ptp(column[units == u]) == 0 for u in np.unique(units))
    method: IntervalMethod = "wilson_fully_passing" if binary and uniform_units else "wilson_bounded"
    return wilson_score(min(1.0, max(0.0, estimate)), n_units, confidence), method


def _check_matrix(matrix: np.ndarray, confidence: float, n_resamples: int) -> np.ndarray:
    values = np.asarray(matrix, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"matrix must be 2-D (cases × columns), got shape {values.shape}")
    if values.shape[0] == 0 or values.shape[1] == 0:
        raise ValueError(f"matrix needs at least one case and one column, got shape {values.shape}")
    if np.isinf(values).any():
        raise ValueError("values must be finite (use NaN to exclude a case from a column)")
    empty = np.flatnonzero(np.isnan(values).all(axis=0))
    if empty.size:
        raise ValueError(f"column(s) {empty.tolist()} have no values: every case is NaN")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    return values
