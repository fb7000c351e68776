"""The resampling engine behind ``bootstrap`` and ``paired``: units, cluster totals and a batched BCa.

Why not call ``scipy.stats.bootstrap`` directly? It computes this interval (the same BCa formulas —
``tests/stats/test_stats_resample.py`` checks agreement), but its jackknife materialises U × (U − 1)
leave-one-out resamples and it draws every unit of every resample: 10,000 tasks × 32 curve points took
≈ 20 s here. For a ratio of sums the leave-one-unit-out values are closed-form, (S − s_u)/(N − c_u), and the
resamples reduce to a count matrix times the unit totals, so the whole curve costs one matrix product
per batch. Every column is evaluated on the same resamples, so pass^k and pass@k curves stay coherent
(statistics.md §3.3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from passhat.stats._special import ndtr, ndtri

_MAX_BATCH_CELLS = 4_000_000
"""Resamples per batch × units; bounds the count matrix to ≈ 32 MB of float64."""

_TIE_TOL = 1e-12
"""Resampled estimates this close (relative) to the estimate are ties. Rounding in a mean of 10,000 units
is ~1e-14; distinct means of pass^k values differ by at least 1/(C(n, k)·N), 8e-9 at n = 16, N = 10,000."""


def resampling_units(groups: Sequence[str | None] | None, n_cases: int) -> np.ndarray:
    """Unit index of each case: cases sharing a group label form one unit; None or no groups: own unit.

    The single definition of "what is resampled together" for every interval and test in this package.
    Units are numbered in order of first appearance, so a fixed input order plus a seed reproduces.
    """
    if groups is None:
        return np.arange(n_cases)
    if len(groups) != n_cases:
        raise ValueError(f"groups has {len(groups)} entries but there are {n_cases} cases")
    index: dict[str, int] = {}
    units = np.empty(n_cases, dtype=np.intp)
    next_unit = 0
    for i, label in enumerate(groups):
        if label is None:
            units[i] = next_unit
            next_unit += 1
            continue
        if label not in index:
            index[label] = next_unit
            next_unit += 1
        units[i] = index[label]
    return units


def unit_totals(values: np.ndarray, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-unit (sum, count) of a cases × columns matrix, skipping NaN (a case excluded for that column)."""
    n_units = int(units.max()) + 1 if units.size else 0
    valid = ~np.isnan(values)
    sums = np.zeros((n_units, values.shape[1]))
    counts = np.zeros((n_units, values.shape[1]))
    np.add.at(sums, units, np.where(valid, values, 0.0))
    np.add.at(counts, units, valid.astype(float))
    return sums, counts


def cluster_se(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Cluster-robust SE of the ratio mean S/N per column, with the U/(U − 1) small-sample factor.

    sqrt(U/(U−1) · Σ_u (s_u − θ̂·c_u)²) / N: Miller 2024's clustered SE with Inspect's C/(C−1)
    correction (statistics.md §2); without groups it is the usual sd/√T. NaN where U < 2.
    """
    n_units = (counts > 0).sum(axis=0)
    total = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = sums.sum(axis=0) / total
        resid = np.where(counts > 0, sums - theta * counts, 0.0)
        factor = np.where(n_units > 1, n_units / (n_units - 1.0), np.nan)
        return np.sqrt(factor * (resid**2).sum(axis=0)) / total


@dataclass(frozen=True)
class BcaFit:
    """A bootstrap distribution of S/N per column with the BCa constants z0 and a (Efron & Tibshirani 1993 §14.3).

    Kept apart from the bounds so that one set of resamples can be read at several confidence levels (the
    paired p-value inverts the interval this way).
    """

    theta: np.ndarray
    """The estimate per column."""
    dist: np.ndarray
    """Resampled estimates, shape (n_resamples, columns)."""
    z0: np.ndarray
    """Bias correction: ndtri of the share of resamples below the estimate (ties, within ``_TIE_TOL``, count half)."""
    accel: np.ndarray
    """Acceleration from the leave-one-unit-out jackknife."""
    n_valid: np.ndarray
    """Units with a value, per column."""

    def bounds(self, confidence: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Two-sided BCa bounds at ``confidence`` (one level, or one per column); NaN where BCa is undefined."""
        z = ndtri((1 - np.asarray(confidence, dtype=float)) / 2) * np.ones_like(self.theta)
        with np.errstate(invalid="ignore", divide="ignore"):
            low_level, high_level = (ndtr(self.z0 + (self.z0 + s * z) / (1 - self.accel * (self.z0 + s * z)))
                                     for s in (1, -1))
        return self._quantile(low_level), self._quantile(high_level)

    def inverted_p_values(self, null: float = 0.0, iterations: int = 50) -> np.ndarray:
        """Per column, the smallest α whose (1 − α) BCa interval excludes ``null``: the interval inverted.

        Found by bisection on α with the same ``bounds``, so "p < α" and "the (1 − α) interval excludes
        the null" agree by construction (BCa intervals nest as α shrinks). 1.0 when no interval excludes
        it; NaN where BCa is undefined.
        """
        def excludes(alpha: np.ndarray) -> np.ndarray:
            low, high = self.bounds(1 - alpha)
            return np.asarray((low > null) | (high < null))

        lo, hi = np.full(self.theta.shape, 1e-9), np.full(self.theta.shape, 1 - 1e-9)
        at_lo, at_hi = excludes(lo), excludes(hi)
        for _ in range(iterations):
            mid = (lo + hi) / 2
            hit = excludes(mid)
            lo, hi = np.where(hit, lo, mid), np.where(hit, mid, hi)
        defined = np.isfinite(self.bounds(0.5)[0])
        return np.where(~defined, np.nan, np.where(at_lo, lo, np.where(at_hi, hi, 1.0)))

    @cached_property
    def _sorted(self) -> np.ndarray:
        return np.sort(self.dist, axis=0)

    def _quantile(self, levels: np.ndarray) -> np.ndarray:
        """Column j's quantile at levels[j], linear interpolation as ``np.quantile``'s default (Hyndman–Fan 7)."""
        xs = self._sorted
        last = xs.shape[0] - 1
        ok = np.isfinite(levels) & (self.n_valid >= 2) & ~np.isnan(xs[-1])  # NaN sorts last
        h = np.where(ok, np.clip(levels, 0, 1), 0) * last
        lo = np.floor(h).astype(int)
        hi = np.minimum(lo + 1, last)
        cols = np.arange(xs.shape[1])
        a, b = xs[lo, cols], xs[hi, cols]
        frac = h - lo
        # numpy's _lerp: interpolate from the nearer end, so a quantile at a data point is that point exactly.
        with np.errstate(invalid="ignore"):
            value = np.where(frac >= 0.5, b - (b - a) * (1 - frac), a + (b - a) * frac)
        return np.where(ok, value, np.nan)


def bca_fit(
    sums: np.ndarray, counts: np.ndarray, *, rng: np.random.Generator, n_resamples: int, batch: int | None = None
) -> BcaFit:
    """Resample units (rows) with replacement, the same resamples for every column, and fit the BCa constants.

    Follows Efron & Tibshirani (1993) §14.3 as ``scipy.stats.bootstrap(method="BCa")`` does: z0 from the
    share of resamples below the estimate (ties count half), acceleration from the leave-one-unit-out
    jackknife, which for a ratio of sums is closed-form: (S − s_u)/(N − c_u).

    A resample is summarised by how many copies of each unit it drew, and the statistic depends on a unit
    only through its row of (sums, counts). So units with identical rows are one *type*, and a resample's
    counts per type are Multinomial(U, m_type/U) — exactly the distribution that drawing U units uniformly
    gives. 10,000 cases of 16 trials have at most 17 types: 2,000 resamples cost 2 ms instead of 0.5 s.
    (``batch`` caps resamples per step.)
    """
    n_units, n_cols = sums.shape
    valid = counts > 0
    n_valid = valid.sum(axis=0)
    total_s, total_n = sums.sum(axis=0), counts.sum(axis=0)
    types, first, multiplicity = np.unique(np.hstack([sums, counts]), axis=0, return_index=True, return_counts=True)
    type_sums, type_counts = sums[first], counts[first]
    step = batch or max(1, min(n_resamples, _MAX_BATCH_CELLS // max(len(types), 1)))
    dist = np.empty((n_resamples, n_cols))
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = total_s / total_n
        for start in range(0, n_resamples, step):
            size = min(step, n_resamples - start)
            weights = rng.multinomial(n_units, multiplicity / n_units, size=size).astype(float)
            dist[start : start + size] = (weights @ type_sums) / (weights @ type_counts)

        # A resample equal to the estimate is a tie (it counts half), whatever the float path that computed
        # it: (w @ sums)/(w @ counts) and S/N differ in the last bits, and counting by float equality made
        # z0, hence the bounds, jump between columns (k) that tie exactly in exact arithmetic.
        tol = _TIE_TOL * np.maximum(1.0, np.abs(theta))
        share_below = ((dist < theta - tol).sum(axis=0) + (dist <= theta + tol).sum(axis=0)) / (2.0 * n_resamples)
        z0 = ndtri(share_below)
        loo = (total_s - sums) / (total_n - counts)
        loo_mean = np.where(valid, loo, 0.0).sum(axis=0) / n_valid
        u = np.where(valid, (n_valid - 1) * (loo_mean - loo), 0.0)
        accel = (u**3).sum(axis=0) / n_valid**3 / (6 * ((u**2).sum(axis=0) / n_valid**2) ** 1.5)
    return BcaFit(theta, dist, z0, accel, n_valid)


def bca_ratio(
    sums: np.ndarray,
    counts: np.ndarray,
    *,
    rng: np.random.Generator,
    confidence: float,
    n_resamples: int,
    batch: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """BCa interval of S/N per column, resampling units (rows) with replacement, the same resamples for all.

    Returns (estimate, low, high, distribution) with distribution of shape (n_resamples, columns).
    Columns where BCa is undefined (degenerate data, fewer than two units) come back as NaN for the
    caller's fallback; no warning is raised. See ``bca_fit`` for the formulas.
    """
    fit = bca_fit(sums, counts, rng=rng, n_resamples=n_resamples, batch=batch)
    low, high = fit.bounds(confidence)
    return fit.theta, low, high, fit.dist
