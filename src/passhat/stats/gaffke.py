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

What is not needed is not computed (docs/design/032): no draws for closed-form columns nor for an end
fixed at 0 or 1 (an all-pass column's upper bound), one computation per distinct column (past the
largest c of the cases that fail at all, every pass^k column is the same 0/1 pattern), Clopper–Pearson
only where it is the answer, the quantile from one partition per row, matrix products in pieces small
enough that OpenBLAS does not start its threads. The draws, their order and the arithmetic per value are
those of the direct computation, so the bounds are the same up to the last bit or two of rounding
(tests/stats/test_stats_gaffke.py holds them to it); 16 cases × 64 trials: 95 → 11 ms, 10,000 × 16:
150 → 18 ms.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from passhat.stats._special import betaincinv

_MAX_BATCH_CELLS = 4_000_000
"""Draws per batch × types; bounds the weight matrix to ≈ 32 MB of float64. The batches decide the order
in which the generator is drawn from, so they are part of what the bounds are."""
_BLAS_ONE_THREAD = 4 * 65_536
"""Multiply-adds in a matrix product that OpenBLAS leaves on one thread (GEMM_MULTITHREAD_THRESHOLD × 65,536)."""


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

    ``rng`` is drawn from only when some bound needs the draws (not when every column is closed-form,
    empty, or all 0 / all 1 on the side that would be drawn); callers give each call a generator of its own.
    """
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    tail = (1 - confidence) / 2
    present = counts > 0
    n_units = present.sum(axis=0)
    total_s, total_n = sums.sum(axis=0), counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        size = total_n / n_units  # c̄: the pseudo-case is a unit of average size
    # Closed form where it is exact: single-case units with 0/1 values are Clopper–Pearson.
    single = np.all(counts <= 1, axis=0)
    binary = np.all((sums == 0) | (sums == counts), axis=0)
    empty = n_units == 0
    exact = single & binary & ~empty
    # An all-1 column reaches 1 and an all-0 column reaches 0 exactly (the pseudo-case on that side is
    # the only weight that could move the statistic, and it is at the bound): those ends need no draws.
    drawn_low, drawn_high = ~exact & ~empty & (total_s > 0), ~exact & ~empty & (total_s < total_n)
    low, high = _drawn(sums, counts, size, tail, drawn_low, drawn_high, rng=rng, n_draws=n_draws, batch=batch)
    if exact.any():  # Clopper–Pearson, only where it is the answer (each distinct count computed once)
        s, f = total_s[exact], total_n[exact] - total_s[exact]
        low[exact] = np.where(s > 0, betaincinv(np.maximum(s, 1), f + 1, tail), 0.0)
        high[exact] = np.where(f > 0, betaincinv(s + 1, np.maximum(f, 1), 1 - tail), 1.0)
    high = np.where(total_s >= total_n, 1.0, high)
    low = np.where(total_s <= 0, 0.0, low)
    return GaffkeBounds(np.where(empty, np.nan, low), np.where(empty, np.nan, high), exact)


def _drawn(sums: np.ndarray, counts: np.ndarray, size: np.ndarray, tail: float, want_low: np.ndarray,
           want_high: np.ndarray, *, rng: np.random.Generator, n_draws: int,
           batch: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The Monte Carlo quantiles: per draw, Gamma(m) weights per type plus an Exp(1) pseudo-case.

    Only the wanted ends are computed (NaN elsewhere), and equal columns — the same (type sums, type
    counts, pseudo-case size) — once: they are the same numbers from the same draws. The draws depend
    only on the types, found over every column, so which columns are computed cannot change them.
    """
    n_cols = sums.shape[1]
    low, high = np.full(n_cols, np.nan), np.full(n_cols, np.nan)
    wanted = want_low | want_high
    if not wanted.any():
        return low, high
    first, multiplicity = _types(np.hstack([sums, counts]))
    n_types = len(first)
    pseudo_size = np.where(np.isfinite(size), size, 0.0)
    columns = np.flatnonzero(wanted)
    type_sums, type_counts = sums[first][:, columns], counts[first][:, columns]
    # a column is its (type sums, type counts, pseudo-case size); a denominator its (type counts, size)
    distinct, inverse = _distinct_columns(np.vstack([type_sums, type_counts, pseudo_size[columns]]))
    den_first, den_of = _distinct_columns(np.vstack([type_counts[:, distinct], pseudo_size[columns[distinct]]]))
    num_rows = type_sums[:, distinct].T.copy()  # distinct columns × types
    den_rows = type_counts[:, distinct[den_first]].T.copy()
    den_size = pseudo_size[columns[distinct[den_first]]][:, None]
    lower = np.empty((len(distinct), n_draws))
    upper = np.empty((len(distinct), n_draws))
    step = batch or max(1, min(n_draws, _MAX_BATCH_CELLS // (n_types + 1)))
    chunk = _blas_rows(len(distinct) + len(den_first), n_types)
    with np.errstate(invalid="ignore", divide="ignore"):
        for start in range(0, n_draws, step):
            m = min(step, n_draws - start)
            weights = rng.standard_gamma(multiplicity.astype(float), size=(m, n_types)).T
            exp = rng.standard_exponential((m, 1)).T
            for at in range(0, m, chunk):
                w = weights[:, at:at + chunk]
                pseudo = exp[:, at:at + chunk] * den_size
                num, den = num_rows @ w, (den_rows @ w + pseudo)[den_of]
                span = slice(start + at, start + at + w.shape[1])
                np.divide(num, den, out=lower[:, span])
                np.divide(num + pseudo[den_of], den, out=upper[:, span])
    need_low, need_high = np.zeros(len(distinct), bool), np.zeros(len(distinct), bool)
    need_low[inverse[want_low[columns]]] = True
    need_high[inverse[want_high[columns]]] = True
    picked_low, picked_high = np.full(len(distinct), np.nan), np.full(len(distinct), np.nan)
    picked_low[need_low] = _quantile_rows(lower[need_low], tail)
    picked_high[need_high] = _quantile_rows(upper[need_high], 1 - tail)
    low[columns] = np.where(want_low[columns], picked_low[inverse], np.nan)
    high[columns] = np.where(want_high[columns], picked_high[inverse], np.nan)
    return low, high


def _types(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_index=True, return_counts=True)[1:]``: each distinct row's first
    occurrence and multiplicity, in numpy's order (lexicographic by value), which orders the Gamma draws.

    Found on the rows' bytes and only the distinct ones sorted by value: ``np.unique(axis=0)`` sorts the
    rows as a structured type, field by field (0.2 s for 10,000 units × 32 columns). Bytes and values agree
    here: the totals are sums of values ≥ 0 (no -0.0) and never NaN."""
    rows = np.ascontiguousarray(rows)
    if rows.shape[0] == 0:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
    as_bytes = rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).reshape(-1)
    _, first, multiplicity = np.unique(as_bytes, return_index=True, return_counts=True)
    order = np.lexsort(rows[first].T[::-1])  # by the first column, then the second, …
    return first[order], multiplicity[order]


def _distinct_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each distinct column's first occurrence, which distinct column each column is).

    By the columns' bytes: ``np.unique(axis=1)`` builds a structured type with a field per row, which for
    2,000 types costs more than the draws it would save."""
    rows = np.ascontiguousarray(matrix.T)
    seen: dict[bytes, int] = {}
    first: list[int] = []
    which = np.empty(rows.shape[0], dtype=np.intp)
    for j, row in enumerate(rows):
        key = row.tobytes()
        if key not in seen:
            seen[key] = len(first)
            first.append(j)
        which[j] = seen[key]
    return np.asarray(first, dtype=np.intp), which


def _blas_rows(rows: int, inner: int) -> int:
    """Draws per matrix product: few enough that OpenBLAS keeps it on one thread (it splits products of more
    than 4 × 65,536 multiply-adds, and on a busy 2-core machine its threads' waiting cost 5-10× the product
    itself: 7 ms of CPU for 4,000 draws × 16 types × 128 columns, against 0.8 ms in pieces); a product too
    large for that to matter is made whole."""
    per_draw = max(1, rows * inner)
    fits = _BLAS_ONE_THREAD // per_draw
    return fits if fits >= 32 else 1 << 30


def _quantile_rows(values: np.ndarray, q: float) -> np.ndarray:
    """``np.quantile(values, q, axis=1)`` (linear, Hyndman–Fan 7), bit for bit, 4-10× faster: one partition
    at the order statistic on the far side and the neighbour found among the few values on the near side
    (numpy partitions at four positions: the two it interpolates between, the minimum and the maximum)."""
    n_rows, n = values.shape
    if n_rows == 0:
        return np.empty(0)
    quantile = np.asarray(q, dtype=float)
    virtual = (n - 1) * quantile  # numpy's virtual index for the linear method
    if not 0 <= virtual < n - 1:  # at an end: numpy takes the minimum or the maximum
        return np.asarray(np.quantile(values, q, axis=1))
    previous = int(np.floor(virtual))
    gamma = virtual - np.floor(virtual)
    if previous + 1 <= n - 1 - previous:  # lower half: partition at the next one, the previous is the largest below it
        part = np.partition(values, previous + 1, axis=1)
        a, b = part[:, :previous + 1].max(axis=1), part[:, previous + 1]
    else:  # upper half: partition at the previous one, the next is the smallest above it
        part = np.partition(values, previous, axis=1)
        a, b = part[:, previous], part[:, previous + 1:].min(axis=1)
    diff = b - a
    out = b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma  # numpy's _lerp: from the nearer end
    # NaN sorts last in numpy's partition and makes its quantile NaN
    return np.where(np.isnan(values).any(axis=1), np.nan, out)
