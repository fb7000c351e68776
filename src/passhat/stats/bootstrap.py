"""Task-level intervals for a suite mean: Gaffke's bounds over cases (``stats.gaffke``), the case as the unit.

The task is the unit of inference (statistics.md §0.3, §3.3): each case keeps all its trials, and cases
sharing a ``group`` (family, template) form one unit, so a family that passes or fails as one counts
once. Each end of the interval is Gaffke's one-sided bound: the Bayesian bootstrap over the units with
one pseudo-case at the far end of [0, 1] (a pseudo-fail for the lower bound, a pseudo-pass for the upper
one). Before issue 22 the interval was the union of a BCa bootstrap and a pseudo-case interval
(``method: bca_pseudocase``, design note 006); near the ceiling its upper end missed the truth up to
6.6 % of the time where 2.5 % is allowed, because BCa's upper bound is too sure of itself, while its lower
end almost never missed. Gaffke's bounds held each tail at α/2 + Monte Carlo error in all 165 settings of
``bench/bench_coverage.py`` (worst 2.9 %) and are exact (Clopper–Pearson) for 0/1 values (design note 026).

Per column (U = units with a value in that column), ``method`` is ``"gaffke"``; every column is read
off the same Dirichlet draws, so pass^k and pass@k curves move together. With every value 1 the upper
bound is exactly 1 and the lower bound is Clopper–Pearson's (α/2)^{1/U}: 30 cases give [0.885, 1].

Per-case values must lie in [0, 1] (pass^k, pass@k, shares), so every bound does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from passhat.stats._resample import resampling_units, unit_totals
from passhat.stats.gaffke import gaffke_bounds

IntervalMethod = Literal["gaffke", "bca_pseudocase", "t_pseudocase", "tango_pseudocase", "pseudocase"]
"""How an interval was obtained: ``gaffke`` for a suite value (``stats.gaffke``); for a paired difference a
method's interval united with the pseudo-case interval, or the latter alone where the method has no
spread to work with (module docstrings of ``paired`` and ``pseudocase``)."""


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
    """``"gaffke"`` for a suite value (module docstring)."""
    confidence: float
    """Two-sided confidence level, e.g. 0.95."""
    n_cases: int
    """Cases that contributed a value (NaN cells are excluded)."""
    n_units: int
    """Independent resampling units: groups plus ungrouped cases."""


DRAWS = 4000
"""Dirichlet draws per interval: the Monte Carlo error of a bound's tail probability is ±0.0025 at α/2 = 0.025."""


def suite_interval(
    values: Sequence[float],
    groups: Sequence[str | None] | None = None,
    *,
    seed: int,
    confidence: float = 0.95,
    n_resamples: int = DRAWS,
) -> Interval:
    """Interval for the mean of per-case values (e.g. per-task pass^k), cases or their groups as units.

    Same seed, same inputs (in the same order) → same interval. See the module docstring.
    """
    matrix = np.asarray(values, dtype=float).reshape(-1, 1)
    return suite_intervals(matrix, groups, seed=seed, confidence=confidence, n_resamples=n_resamples)[0]


def suite_intervals(
    matrix: np.ndarray,
    groups: Sequence[str | None] | None = None,
    *,
    seed: int,
    confidence: float = 0.95,
    n_resamples: int = DRAWS,
    batch: int | None = None,
) -> list[Interval]:
    """One interval per column of a cases × columns matrix (e.g. k = 1..16), all from the SAME draws.

    Sharing the Dirichlet draws keeps the curves coherent: in every draw pass^k is non-increasing and
    pass@k non-decreasing in k (statistics.md §3.3). NaN marks a case excluded from a column (n_t < k);
    each column averages its own cases. ``n_resamples`` is the number of draws; ``batch`` bounds memory
    (draws per step).
    """
    values = _check_matrix(matrix, confidence, n_resamples)
    units = resampling_units(groups, values.shape[0])
    sums, counts = unit_totals(values, units)
    bounds = gaffke_bounds(sums, counts, confidence, rng=np.random.default_rng(seed), n_draws=n_resamples,
                           batch=batch)
    n_units = (counts > 0).sum(axis=0).tolist()
    out = []
    # as Python floats, column by column: a summary asks for 25 curves of 128 columns, and numpy's per-call
    # cost on a column of 16 values was most of this loop
    for j, (column, low, high) in enumerate(zip(values.T.tolist(), bounds.low.tolist(), bounds.high.tolist(),
                                               strict=True)):
        present = [x for x in column if not math.isnan(x)]
        # fsum: the reported mean must not depend on how many columns were computed together.
        est = math.fsum(present) / len(present)
        out.append(Interval(est, low, high, "gaffke", confidence, len(present), n_units[j]))
    return out


Direction = Literal["non_increasing", "non_decreasing"]
"""How a curve's truth moves with k: pass^k is non-increasing in k, pass@k non-decreasing."""


def coherent_curve(intervals: Sequence[Interval], direction: Direction) -> list[Interval]:
    """Intervals for k = 1, 2, … made coherent: each contains its estimate, and both bounds move with k as the truth does.

    Two steps, each of which only widens an interval, so no interval covers less than before:

    1. clamp: low ≤ estimate ≤ high (the interval of design 006 could exclude its estimate with 1–3 families);
    2. envelope, for a non-increasing curve (pass^k): low_k ← min_{j ≤ k} low_j and
       high_k ← max_{j ≥ k} high_j. Both are non-increasing in k by construction, and
       low_k' ≤ low_k, high_k' ≥ high_k, so whenever [low_k, high_k] covers θ_k so does the new one.
       A non-decreasing curve (pass@k) is the mirror image.

    Step 1 before step 2 keeps the estimate inside (the envelope only moves bounds outwards). The
    estimates themselves are left alone: with cases excluded for large k (n_t < k) they need not be
    monotone, and the bounds are the claim (issue 22; not yet measured by simulation).
    """
    lows = [min(iv.low, iv.estimate) for iv in intervals]
    highs = [max(iv.high, iv.estimate) for iv in intervals]
    if direction == "non_increasing":
        lows = np.minimum.accumulate(lows).tolist()
        highs = np.maximum.accumulate(highs[::-1])[::-1].tolist()
    else:
        lows = np.minimum.accumulate(lows[::-1])[::-1].tolist()
        highs = np.maximum.accumulate(highs).tolist()
    # one new Interval per k, not a ``replace`` per step (a summary makes 3,200 of them)
    return [Interval(iv.estimate, lo, hi, iv.method, iv.confidence, iv.n_cases, iv.n_units)
            for iv, lo, hi in zip(intervals, lows, highs, strict=True)]


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
