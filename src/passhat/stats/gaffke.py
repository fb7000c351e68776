"""Gaffke's bounds for a mean of per-case values in [0, 1]: the Bayesian bootstrap with one pseudo-case at the bound.

A suite value (pass^k, pass@k, a share) is a mean over cases of values in [0, 1], and what makes it hard
to bound at 10–40 cases is the case the sample did not draw: near the ceiling most cases pass every
trial, and a sample of 20 often lacks the one hopeless case the population holds. An interval built
from the spread the sample shows (BCa, percentile, t) is then too sure of itself: the percentile
bootstrap's lower bound sat above the truth in 10–60 % of simulated near-ceiling suites, where 2.5 %
is allowed (``bench/bench_coverage.py``).

Each bound here is one-sided and is the Bayesian bootstrap (Rubin 1981) with one extra pseudo-case at
the far end of the range, [0, 1]:

- lower bound: the α/2 quantile of W₀·0 + Σ_u W_u·x_u, with (W₀, W_1, …, W_U) ~ Dirichlet(1, …, 1) — a
  pseudo-case that *failed*, of unknown weight, next to the U observed units;
- upper bound: the 1 − α/2 quantile of W₀·1 + Σ_u W_u·x_u — a pseudo-case that passed.

This is the bound Gaffke (2005) proposed for the mean of a variable on a known interval, studied by
Learned-Miller & Thomas (2019, arXiv:1905.06208): they conjectured that it covers at least 1 − α for
every distribution on the interval, every sample size and every α, and found no counter-example
numerically (a proof is announced by Vlassis & Thomas; not checked here). For 0/1 values it *is*
Clopper–Pearson: the weight on the passes is Beta(s, f + 1) for the lower bound and Beta(s + 1, f) for
the upper one, so a suite where all U cases passed gets the lower bound (α/2)^{1/U}, and no interval can
claim more: a population whose cases pass all or nothing at a rate just above that gives an all-pass
sample more than α/2 of the time. Away from 0/1 values the bound is the bootstrap's spread plus the
pseudo-case, whose weight shrinks as 1/(U + 1).

Cases sharing a ``group`` are one unit: the statistic is the ratio Σ W_u·s_u / Σ W_u·c_u of the units'
sums over their sizes, and the pseudo-case is a unit of average size c̄ (the same generalisation as
Miller's clustered standard error; Gaffke's guarantee is for independent values, so the grouped form is
checked by simulation only).

Computation. The weights of U units are U independent Exp(1) draws normalised, so units with the same
row of (sums, counts) — a *type* — only matter through the sum of their draws, a Gamma(m) variable for
m units of the type. 10,000 cases of 16 trials have at most 17 types, so 4,000 draws cost a
millisecond. Every column (k = 1, 2, …) is read off the SAME draws, so per draw the pass^k statistic is
non-increasing in k as the values are. Where every unit is a single case with a value of exactly 0 or 1
the bounds are computed in closed form (Clopper–Pearson), since that is their exact value.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from passhat.stats._special import betaincinv

_MAX_BATCH_CELLS = 4_000_000
"""Draws per batch × types; bounds the weight matrix to ≈ 32 MB of float64."""


class GaffkeBounds(NamedTuple):
    """Two-sided bounds per column, each end a one-sided bound at (1 − confidence)/2."""

    low: np.ndarray
    """Lower bounds (NaN for a column with no unit)."""
    high: np.ndarray
    """Upper bounds (NaN for a column with no unit)."""
    exact: np.ndarray
    """True where the bounds are the closed form (every unit one case, every value 0 or 1)."""


def gaffke_bounds(sums: np.ndarray, counts: np.ndarray, confidence: float, *, rng: np.random.Generator,
                  n_draws: int, batch: int | None = None) -> GaffkeBounds:
    """Gaffke's lower and upper bounds per column from per-unit totals (units × columns).

    ``sums[u, j]`` is the sum of unit u's case values in column j and ``counts[u, j]`` how many of its
    cases have a value there (0: the unit is absent from the column). Values must lie in [0, 1]. The
    bounds are the ends of a two-sided interval at ``confidence``.
    """
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    tail = (1 - confidence) / 2
    present = counts > 0
    n_units = present.sum(axis=0)
    total_s, total_n = sums.sum(axis=0), counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        size = total_n / n_units  # c̄: the pseudo-case is a unit of average size
    low, high = _drawn(sums, counts, size, tail, rng=rng, n_draws=n_draws, batch=batch)
    # Closed form where it is exact: single-case units with 0/1 values are Clopper–Pearson.
    single = np.all(counts <= 1, axis=0)
    binary = np.all((sums == 0) | (sums == counts), axis=0)
    exact = single & binary & (n_units > 0)
    s, f = total_s, total_n - total_s
    with np.errstate(invalid="ignore"):
        cp_low = np.where(s > 0, betaincinv(np.maximum(s, 1), f + 1, tail), 0.0)
        cp_high = np.where(f > 0, betaincinv(s + 1, np.maximum(f, 1), 1 - tail), 1.0)
    low, high = np.where(exact, cp_low, low), np.where(exact, cp_high, high)
    # An all-1 column reaches 1 and an all-0 column reaches 0 exactly (the pseudo-case on that side is
    # the only weight that could move the statistic, and it is at the bound).
    high = np.where(total_s >= total_n, 1.0, high)
    low = np.where(total_s <= 0, 0.0, low)
    empty = n_units == 0
    return GaffkeBounds(np.where(empty, np.nan, low), np.where(empty, np.nan, high), exact)


def _drawn(sums: np.ndarray, counts: np.ndarray, size: np.ndarray, tail: float, *, rng: np.random.Generator,
           n_draws: int, batch: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The Monte Carlo quantiles: per draw, Gamma(m) weights per type plus an Exp(1) pseudo-case."""
    n_cols = sums.shape[1]
    _, first, multiplicity = np.unique(np.hstack([sums, counts]), axis=0, return_index=True, return_counts=True)
    type_sums, type_counts = sums[first], counts[first]
    step = batch or max(1, min(n_draws, _MAX_BATCH_CELLS // (len(first) + 1)))
    lower = np.empty((n_draws, n_cols))
    upper = np.empty((n_draws, n_cols))
    pseudo_size = np.where(np.isfinite(size), size, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        for start in range(0, n_draws, step):
            m = min(step, n_draws - start)
            weights = rng.standard_gamma(multiplicity.astype(float), size=(m, len(first)))
            pseudo = rng.standard_exponential((m, 1)) * pseudo_size
            num, den = weights @ type_sums, weights @ type_counts + pseudo
            lower[start:start + m] = num / den
            upper[start:start + m] = (num + pseudo) / den
        low = np.quantile(lower, tail, axis=0)
        high = np.quantile(upper, 1 - tail, axis=0)
    return low, high
