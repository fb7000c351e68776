"""The pseudo-case interval: a closed-form interval for a mean of per-case values in [0, 1] (design note 006).

Why it exists: a suite mean near the ceiling (most cases pass every trial) or over a few families of
cases rests on the handful of units that are not perfect. When a sample happens to contain fewer of
them than the population, every interval built from the sample's spread (BCa, t, Wilson with a design
effect) is too narrow: BCa covered 0.83 at 20 cases × 16 trials with 80 % of cases always passing and
the rest p ~ Beta(9, 1). What no sample can show is the unit it did not draw, so this interval adds a
pseudo-case of unknown value, spread over the cells of the table:

- one run (``LAPLACE``): one pseudo-pass and one pseudo-fail (Laplace's rule of succession);
- a paired comparison (``PAIRED``): a quarter on each cell of the paired 2×2 table (Perks 1947).

The Bayesian bootstrap over units (Rubin 1981) with the pseudo-case as a Dirichlet-process prior (base
measure H of total weight W) has posterior mean m = (S + c̄·Σ_H w·v)/(N + c̄·W) and posterior variance
V = [Σ_u (s_u − m·c_u)² + c̄²·Σ_H w·(v − m)²] / ((U + W)(U + W + 1)·c̄²) for a ratio of unit totals s_u
over unit sizes c_u (c̄ their mean; one unit per case without groups). The interval is the
equal-tailed interval of the Beta distribution with that mean and variance, Beta(m·ν, (1 − m)·ν) with
ν = m(1 − m)/V − 1.

For 0/1 per-case values without groups, ``LAPLACE`` gives exactly the Bayes–Laplace interval
Beta(s + 1, f + 1) over cases; when every case passes, its lower bound is (α/2)^{1/(U+1)}, next to
Clopper–Pearson's (α/2)^{1/U} (0.839 against 0.832 at 20 cases). Half that pseudo-case (Jeffreys'
Beta(½, ½)) was tried first: its all-pass bound 0.883 is the Jeffreys interval's known liberality at the
edge, and it covered only 0.91 when the suite's true pass^16 was 0.87 (``bench/bench_coverage.py``).
The upper bound is 1 when every value is 1 and the lower bound 0 when every value is 0, so a perfect
run can reach a bar of 1. For fractional values the width follows the observed spread plus the
pseudo-case; the interval stays inside [0, 1], needs no resampling (no seed) and costs one
``betaincinv`` per column.

``paired.paired_differences`` reports the union of this interval (``PAIRED``) and its own (t or Tango):
each covers where the other does not. Suite values used ``LAPLACE`` united with BCa until issue 22; they
now use Gaffke's bounds (``stats.gaffke``, design note 026), and ``LAPLACE`` remains for
``bench/bench_coverage.py``'s "before" column.
"""

from __future__ import annotations

import math

import numpy as np

from passhat.stats._special import betainc, betaincinv

PseudoCase = tuple[tuple[float, float], ...]
"""The pseudo-case as (value, weight) pairs on [0, 1]; its total weight W is the sum of the weights."""

LAPLACE: PseudoCase = ((0.0, 1.0), (1.0, 1.0))
"""One run: a pseudo-pass and a pseudo-fail — the uniform prior Beta(1, 1) for 0/1 values."""

PAIRED: PseudoCase = ((0.0, 0.25), (0.5, 0.5), (1.0, 0.25))
"""A paired difference d ∈ [−1, 1] mapped to x = (d + 1)/2: a quarter on each cell of the paired 2×2
table — base only passes (d = −1), both or neither (d = 0, two cells), candidate only (d = +1)."""


def _beta(sums: np.ndarray, counts: np.ndarray, pseudo: PseudoCase) -> tuple[np.ndarray, ...]:
    """(a, b, all_zero, all_one, empty) per column: the Beta matched to the posterior mean and variance."""
    present = counts > 0
    n_units = present.sum(axis=0)
    # fsum per column: a column's interval must not depend on which columns were computed with it.
    total_s, total_n = _column_fsum(sums), counts.sum(axis=0)
    weight = sum(w for _, w in pseudo)
    with np.errstate(invalid="ignore", divide="ignore"):
        size = total_n / n_units  # c̄: the pseudo-case is a unit of average size
        m = (total_s + size * sum(v * w for v, w in pseudo)) / (total_n + size * weight)
        resid = np.where(present, sums - m * counts, 0.0)
        spread = _column_fsum(resid**2) + size**2 * sum(w * (v - m) ** 2 for v, w in pseudo)
        var = spread / ((n_units + weight) * (n_units + weight + 1) * size**2)
        nu = m * (1 - m) / var - 1
        a, b = np.where(nu > 0, m * nu, np.nan), np.where(nu > 0, (1 - m) * nu, np.nan)
    return a, b, total_s <= 0, total_s >= total_n, n_units == 0


def _column_fsum(matrix: np.ndarray) -> np.ndarray:
    return np.array([math.fsum(column) for column in matrix.T])


def pseudocase_interval(sums: np.ndarray, counts: np.ndarray, confidence: float,
                   pseudo: PseudoCase = LAPLACE) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided (low, high) per column from per-unit totals ``sums`` and sizes ``counts`` (units × columns).

    A unit with count 0 in a column is absent from it (a case excluded for that k). Per-case values must
    lie in [0, 1]; ``sums``/``counts`` are the totals ``_resample.unit_totals`` returns. Columns with no
    unit come back as (NaN, NaN).
    """
    a, b, all_zero, all_one, empty = _beta(sums, counts, pseudo)
    tail = (1 - confidence) / 2
    with np.errstate(invalid="ignore"):
        low, high = betaincinv(a, b, tail), betaincinv(a, b, 1 - tail)
    # At the edges: nothing below an all-0 suite, nothing above an all-1 suite.
    low = np.where(all_zero | np.isnan(low), 0.0, low)
    high = np.where(all_one | np.isnan(high), 1.0, high)
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def pseudocase_p_value(sums: np.ndarray, counts: np.ndarray, null: float, pseudo: PseudoCase = LAPLACE) -> np.ndarray:
    """Per column, the smallest 1 − confidence whose ``pseudocase_interval`` interval excludes ``null``.

    Twice the smaller Beta tail beyond ``null``, capped at 1: the equal-tailed interval inverted, so "p <
    1 − confidence" and "the interval excludes ``null``" agree. NaN for a column with no unit.
    """
    a, b, all_zero, all_one, empty = _beta(sums, counts, pseudo)
    with np.errstate(invalid="ignore"):
        below = betainc(a, b, null)
        p = np.minimum(1.0, 2 * np.minimum(below, 1 - below))
    p = np.where(np.abs(below - 0.5) < 1e-12, 1.0, p)  # the null at the median, up to rounding
    # At an edge convention the interval reaches 0 (or 1): it never excludes a null on that side.
    p = np.where((all_zero & (null <= 0)) | (all_one & (null >= 1)) | np.isnan(p), 1.0, p)
    return np.where(empty, np.nan, p)
