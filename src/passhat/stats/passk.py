"""Per-task pass@k and pass^k estimators, their unbiased variances, and the fixed-suite standard error.

A task ran ``n`` trials (infrastructure errors already removed) and ``c`` of them passed. Both
estimators are the unbiased hypergeometric forms (reference/statistics.md §1.2): draw k of the n
trials without replacement; pass^k is the chance that all k passed (Yao et al. 2024, τ-bench) and
pass@k the chance that at least one did (Chen et al. 2021, HumanEval). They are U-statistics and, as
c is complete and sufficient for Bin(n, p), the UMVUEs. The plug-ins (c/n)^k and 1 − (1 − c/n)^k are
biased and deliberately absent.

Arithmetic is exact: ``math.comb`` on Python ints, then one int/int (or Fraction) division, which
Python rounds correctly. ``scipy.special.comb(exact=False)`` overflows at C(2000, 1000) (§1.3).

A task with fewer trials than k has no estimate: the functions raise, and the caller must exclude the
task for that k and report it (as τ²-bench does), never divide by a global trial count.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from passhat.metric_names import PassMetric


def _check(n: int, c: int, k: int) -> tuple[int, int, int]:
    n, c, k = operator.index(n), operator.index(c), operator.index(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got k={k}")
    if c < 0 or c > n:
        raise ValueError(f"successes c must satisfy 0 <= c <= n, got c={c}, n={n}")
    if n < k:
        raise ValueError(
            f"n={n} trials < k={k}: pass^k/pass@k are undefined; exclude this task for k={k} and report it"
        )
    return n, c, k


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k = C(c, k) / C(n, k): probability that k trials drawn from the n all passed.

    Source: Yao et al. 2024 (τ-bench, ``tau_bench/run.py``); statistics.md §1.2. Raises ValueError
    for k < 1, c outside [0, n], or n < k (exclude such tasks; see module docstring).
    """
    n, c, k = _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k = 1 − C(n − c, k) / C(n, k): probability that at least one of k drawn trials passed.

    Source: Chen et al. 2021 (HumanEval, ``human_eval/evaluation.py``); statistics.md §1.2. The
    subtraction happens on integers before the one division, so small answers keep full precision.
    Raises ValueError for k < 1, c outside [0, n], or n < k.
    """
    n, c, k = _check(n, c, k)
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def _unbiased_variance(n: int, m: int, k: int) -> float | None:
    # θ̂ = C(m,k)/C(n,k) with m ~ Bin(n, q) estimates q^k, and E[C(m,2k)/C(n,2k)] = q^{2k}, so
    # θ̂² − C(m,2k)/C(n,2k) is unbiased for Var(θ̂) = E[θ̂²] − q^{2k} (statistics.md §1.4).
    if n < 2 * k:
        return None
    theta_hat = Fraction(math.comb(m, k), math.comb(n, k))
    value = theta_hat**2 - Fraction(math.comb(m, 2 * k), math.comb(n, 2 * k))
    return max(0.0, float(value))


def unbiased_variance_pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Unbiased estimate of Var(pass_hat_k(n, c, k)) given the task's true pass rate: θ̂² − C(c, 2k)/C(n, 2k).

    Source: statistics.md §1.4 (checked by exact enumeration). Returns None when n < 2k: then no
    unbiased estimator exists (E f(c) is a polynomial of degree ≤ n). Clipped at 0. This is the
    within-task ("trial noise") variance used by the fixed-suite SE, see ``fixed_suite_se``.
    """
    n, c, k = _check(n, c, k)
    return _unbiased_variance(n, c, k)


def unbiased_variance_pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased estimate of Var(pass_at_k(n, c, k)): q̂² − C(n − c, 2k)/C(n, 2k), q̂ = C(n − c, k)/C(n, k).

    pass@k = 1 − q̂ has the variance of q̂, the pass^k estimator for failures. Source: statistics.md
    §1.4. Returns None when n < 2k; clipped at 0.
    """
    n, c, k = _check(n, c, k)
    return _unbiased_variance(n, n - c, k)


def estimate(n: int, c: int, k: int, metric: PassMetric) -> float:
    """``pass_hat_k`` or ``pass_at_k`` chosen by name (:data:`~passhat.metric_names.PassMetric`)."""
    if metric == "pass_hat_k":
        return pass_hat_k(n, c, k)
    if metric == "pass_at_k":
        return pass_at_k(n, c, k)
    raise ValueError(f"metric must be 'pass_hat_k' or 'pass_at_k', got {metric!r}")


def curve(n: int, c: int, kind: PassMetric) -> list[float]:
    """The whole per-task curve [estimate(n, c, k, kind) for k = 1..n]; empty when n == 0 (no trials)."""
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"n must be >= 0, got n={n}")
    return [estimate(n, c, k, kind) for k in range(1, n + 1)]


def estimate_matrix(counts: Sequence[tuple[int, int]], ks: Sequence[int], kind: PassMetric) -> np.ndarray:
    """Tasks × ks matrix of per-task estimates from (n, c) pairs, NaN where n < k (task excluded for that k).

    This is the input of ``suite_intervals`` and ``paired_differences``: NaN marks a task that has too
    few trials for that k, so each column averages only the tasks that can support it, with each task's
    own n. Each distinct (n, c) is computed once: 10,000 tasks of 16 trials have at most 17 of them.
    """
    out = np.full((len(counts), len(ks)), np.nan)
    rows: dict[tuple[int, int], list[float]] = {}
    for t, (n, c) in enumerate(counts):
        row = rows.get((n, c))
        if row is None:
            row = rows[(n, c)] = [estimate(n, c, k, kind) if n >= k else math.nan for k in ks]
        out[t] = row
    return out


def fixed_suite_se(variances: Sequence[float | None], counts: Sequence[int] | None = None) -> float | None:
    """Fixed-suite standard error of the suite mean: (1/T)·sqrt(Σ_t V̂_t).

    Source: statistics.md §1.5(b). It answers "did behaviour on *these* tasks change?" (trial noise
    only) and says nothing about new tasks; report it next to the bootstrap interval, which targets the
    super-population. Returns None if any V̂_t is None (some task has n < 2k) or there are no tasks:
    a partial sum would understate the error. ``counts`` gives how many tasks share each variance (tasks
    with equal (n, c) have equal V̂): T = Σ counts.
    """
    weights = [1] * len(variances) if counts is None else [operator.index(m) for m in counts]
    if len(weights) != len(variances) or any(m < 0 for m in weights):
        raise ValueError("counts must be one non-negative integer per variance")
    if len(variances) == 0 or sum(weights) == 0 or any(v is None for v in variances):
        return None
    values = [float(v) for v in variances if v is not None]
    if any(v < 0 or math.isnan(v) for v in values):
        raise ValueError("variances must be non-negative numbers or None")
    return math.sqrt(math.fsum(v * m for v, m in zip(values, weights, strict=True))) / sum(weights)
