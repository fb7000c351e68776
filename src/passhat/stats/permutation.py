"""Did anything change on these cases? The within-case permutation test of two runs, and its MDE.

Two runs of the same suite differ by chance and by whatever changed. Under "nothing changed" — the
candidate's trials of a case come from the same pass probability as the baseline's, for every case —
the n_b + n_c trials of a case are exchangeable, so given the case's total passes K the candidate's
passes are hypergeometric: c* ~ Hypergeom(n_b + n_c, K, n_c), and the baseline's are K − c*. The
statistic is the one ``passhat compare`` reports, the sum over cases of the metric's difference
d_t = f(n_c, c*) − f(n_b, K − c*) (f the unbiased pass^k or pass@k of a case's counts), and its null
distribution is that of a sum of independent per-case draws: exact, whatever the population of cases,
their families, or how many cases near the ceiling show nothing (a case with K = 0 or K = n_b + n_c
cannot move and adds nothing). This is the stratified permutation test (Fisher's exact test per case,
summed as in Mantel–Haenszel), with the metric's own difference as the statistic.

It answers "did the candidate behave differently on these cases?", not "by how much, for cases like
these?" — the paired interval (``stats.paired``) answers that, and with 20 cases it must allow for a
case it did not draw: its pseudo-case makes ±0.06 the narrowest it can be, so a uniform 5-point drop
of pass^1 at 20 cases excluded 0 only 3–10 % of the time. The permutation test needs no such
allowance: its error under no change is exact at any size, and it caught the same drop 10–87 % of
the time, more with more trials (``bench/sim_power.py``).

The p-value is a Monte Carlo one, (1 + #{S* at least as extreme})/(R + 1), doubled for two sides: valid
at any number of draws R (Besag & Clifford 1989), reproducible from the seed. Cases with the same
(n_b, n_c, K) share their null distribution, so a draw is one multinomial per such type: 10,000 cases of
16 trials have at most 33 types.

The minimum detectable effect (``uniform_drop_mde``) says what it means: the mean change of the metric
when every case's pass rate p drops by the same amount s (a uniform drop), at the s that this test
detects with the given power — each case's p taken as its pooled rate K/(n_b + n_c), the test's null
variance and the alternative's variance both exact binomial sums. At that size a uniform drop was
detected 67–86 % of the time (nominal 80 %; ``bench/sim_power.py``). It is not a bound for every shape
of change: the same mean change concentrated on a few cases that break completely was detected 60–71 %
of the time for pass^1 (86–90 % for pass^4). The MDE before issue 22 bounded every shape, and so was
1.6–4.1× larger: a uniform drop of its size was detected 98–100 % of the time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from passhat.metric_names import PassMetric
from passhat.stats.passk import pass_at_k, pass_hat_k


class PermutationResult(NamedTuple):
    """Per column: the two-sided p-value of "nothing changed" and the exact null moments of the summed difference."""

    p_value: np.ndarray
    """Two-sided Monte Carlo p-value (1 where no case can move)."""
    null_sd: np.ndarray
    """Standard deviation of the mean difference under "nothing changed", given each case's total passes."""
    informative: np.ndarray
    """Cases per column whose total passes let them move (0 < K < n_b + n_c)."""


@lru_cache(maxsize=4096)
def _values(family: PassMetric, n: int, k: int) -> tuple[float, ...]:
    """f(n, c) for c = 0..n: the unbiased per-case estimate of the metric from c passes of n."""
    f = pass_hat_k if family == "pass_hat_k" else pass_at_k
    return tuple(f(n, c, k) for c in range(n + 1))


@lru_cache(maxsize=65536)
def _hypergeom(n_b: int, n_c: int, total: int) -> tuple[int, tuple[float, ...]]:
    """(lowest c*, pmf) of the candidate's passes given the case's total passes, exact from integers."""
    lo, hi = max(0, total - n_b), min(n_c, total)
    whole = math.comb(n_b + n_c, n_c)
    return lo, tuple(math.comb(total, x) * math.comb(n_b + n_c - total, n_c - x) / whole for x in range(lo, hi + 1))


def _types(n_b: np.ndarray, c_b: np.ndarray, n_c: np.ndarray, c_c: np.ndarray) -> dict[tuple[int, int, int], int]:
    keys = np.stack([n_b, n_c, c_b + c_c], axis=1)
    unique, counts = np.unique(keys, axis=0, return_counts=True)
    return {(int(a), int(b), int(t)): int(m) for (a, b, t), m in zip(unique, counts, strict=True)}


def _multinomial(rng: np.random.Generator, m: int, pmf: np.ndarray, n_draws: int) -> np.ndarray:
    """``n_draws`` Multinomial(m, pmf) count vectors, as a chain of vectorised binomials (numpy's own
    multinomial loops over the draws: 40 ms per type for 4,000 draws, against about 1 ms here)."""
    out = np.zeros((n_draws, len(pmf)))
    left = np.full(n_draws, m, dtype=np.int64)
    rest = 1.0
    for i, p in enumerate(pmf[:-1]):
        share = min(1.0, max(0.0, p / rest)) if rest > 0 else 0.0
        out[:, i] = rng.binomial(left, share)
        left -= out[:, i].astype(np.int64)
        rest -= p
    out[:, -1] = left
    return out


def _differences(key: tuple[int, int, int], columns: Sequence[tuple[PassMetric, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(pmf over c*, d per c* × column): the type's null distribution and what each outcome adds to each column."""
    n_b, n_c, total = key
    lo, pmf = _hypergeom(n_b, n_c, total)
    d = np.zeros((len(pmf), len(columns)))
    for j, (family, k) in enumerate(columns):
        if n_b >= k and n_c >= k:
            fc, fb = _values(family, n_c, k), _values(family, n_b, k)
            d[:, j] = [fc[x] - fb[total - x] for x in range(lo, lo + len(pmf))]
    return np.array(pmf), d


def permutation_test(n_base: np.ndarray, c_base: np.ndarray, n_cand: np.ndarray, c_cand: np.ndarray,
                     columns: Sequence[tuple[PassMetric, int]], *, rng: np.random.Generator,
                     n_draws: int = 4000) -> PermutationResult:
    """The within-case permutation test of "nothing changed" for each (family, k) column (module docstring).

    Per case: graded trials and passes in each run. A case is in column (family, k) when both runs have at
    least k graded trials; the statistic is the sum of its differences, so the mean difference ``passhat
    compare`` reports is tested as it is.
    """
    n_b, c_b, n_c, c_c = (np.asarray(x, dtype=int) for x in (n_base, c_base, n_cand, c_cand))
    if not (n_b.shape == c_b.shape == n_c.shape == c_c.shape) or np.any((c_b < 0) | (c_b > n_b) | (c_c < 0) | (c_c > n_c)):
        raise ValueError("need per-case counts of one shape with 0 <= passes <= trials in each run")
    n_cols = len(columns)
    observed = np.zeros(n_cols)
    rows, multiplicity = np.unique(np.stack([n_b, c_b, n_c, c_c], axis=1), axis=0, return_counts=True)
    for (a, x, b, y), m in zip(rows.tolist(), multiplicity.tolist(), strict=True):
        for j, (family, k) in enumerate(columns):
            if a >= k and b >= k:
                observed[j] += m * (_values(family, b, k)[y] - _values(family, a, k)[x])
    mean, var = np.zeros(n_cols), np.zeros(n_cols)
    draws = np.zeros((n_draws, n_cols))
    informative = np.zeros(n_cols, dtype=int)
    for key, m in _types(n_b, c_b, n_c, c_c).items():
        pmf, d = _differences(key, columns)
        if len(pmf) == 1:
            mean += m * d[0]
            continue
        e = pmf @ d
        mean += m * e
        var += m * (pmf @ d**2 - e**2)
        informative += m * (np.ptp(d, axis=0) > 0)
        draws += _multinomial(rng, m, pmf, n_draws) @ d
    tol = 1e-9 * np.maximum(1.0, np.abs(observed))
    low = (1 + np.sum(draws <= observed + tol, axis=0)) / (n_draws + 1)
    high = (1 + np.sum(draws >= observed - tol, axis=0)) / (n_draws + 1)
    p = np.where(var > 0, np.minimum(1.0, 2 * np.minimum(low, high)), 1.0)
    counts = np.array([max(1, int(np.sum((n_b >= k) & (n_c >= k)))) for _, k in columns])
    return PermutationResult(p, np.sqrt(var) / counts, informative)


@lru_cache(maxsize=1024)
def _log_comb(n: int) -> np.ndarray:
    return np.array([math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) for x in range(n + 1)])


def _binomial_moments(family: PassMetric, n: int, k: int, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E and Var of f(n, c), c ~ Bin(n, p), for each p (exact sums over c)."""
    c = np.arange(n + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.log(np.maximum(p[:, None], 1e-300))
        logq = np.log(np.maximum(1 - p[:, None], 1e-300))
        weights = np.exp(_log_comb(n) + np.where(c > 0, c * logp, 0.0) + np.where(c < n, (n - c) * logq, 0.0))
    f = np.array(_values(family, n, k))
    mean = weights @ f
    return mean, np.maximum(weights @ f**2 - mean**2, 0.0)


def uniform_drop_mde(n_base: np.ndarray, c_base: np.ndarray, n_cand: np.ndarray, c_cand: np.ndarray, family: PassMetric,
                     k: int, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """The mean change of the metric that ``permutation_test`` detects with ``power`` when it is a uniform drop.

    Every case's pass rate p (its pooled rate K/(n_b + n_c)) drops by the same s; the change of the
    metric is the mean over cases of E f(n_c, Bin(n_c, p − s)) − E f(n_b, Bin(n_b, p)), and the test
    detects it with the given power when |Δ| ≥ t_{1−α/2}·sd₀ + t_{power}·sd₁ (summed over cases), sd₀ the
    test's null spread (both runs at the mean rate p − s/2), sd₁ the alternative's, and t with T − 1
    degrees of freedom for T cases (the normal quantiles promised 80 % and gave 68–80 %). Returns |Δ| at the
    smallest such s, or None when even s = 1 does not (too few cases, or none with k trials in both runs).
    """
    n_b, c_b, n_c, c_c = (np.asarray(x, dtype=int) for x in (n_base, c_base, n_cand, c_cand))
    keep = (n_b >= k) & (n_c >= k)
    if not keep.any():
        return None
    types = _types(n_b[keep], c_b[keep], n_c[keep], c_c[keep])  # (n_b, n_c, K) → cases: the pooled rate is K/N
    from scipy.stats import t as student_t  # lazily: scipy.stats costs a second of every start-up

    df = max(1, int(keep.sum()) - 1)
    z_a = float(student_t.ppf(1 - alpha / 2, df))
    z_b = float(student_t.ppf(power, df))
    shapes: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    for (a, b, total), m in types.items():
        rates, weights = shapes.get((a, b), (np.empty(0), np.empty(0)))
        shapes[(a, b)] = (np.append(rates, total / (a + b)), np.append(weights, m))

    def moments(s: float) -> tuple[float, float, float]:
        delta = var0 = var1 = 0.0
        for (a, b), (p, m) in shapes.items():
            q, mid = np.clip(p - s, 0.0, 1.0), np.clip(p - s / 2, 0.0, 1.0)
            e_b, v_b = _binomial_moments(family, a, k, p)
            e_c, v_c = _binomial_moments(family, b, k, q)
            _, v0_b = _binomial_moments(family, a, k, mid)
            _, v0_c = _binomial_moments(family, b, k, mid)
            delta += float(m @ (e_c - e_b))
            var1 += float(m @ (v_b + v_c))
            var0 += float(m @ (v0_b + v0_c))
        return abs(delta), math.sqrt(var0), math.sqrt(var1)

    def reached(s: float) -> bool:
        delta, sd0, sd1 = moments(s)
        return sd1 == 0 and delta > 0 or sd1 > 0 and delta - z_a * sd0 >= z_b * sd1

    if not reached(1.0):
        return None
    lo, hi = 0.0, 1.0
    for _ in range(30):  # s to within 1e-9
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if reached(mid) else (mid, hi)
    return moments(hi)[0] / int(keep.sum())
