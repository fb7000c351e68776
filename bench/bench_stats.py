"""Time the statistics for 10,000 tasks × 16 trials: the pass^k and pass@k curves k = 1..16 with intervals.

Run: ``python bench/bench_stats.py``. Prints seconds per step, and the speed-up of our batched BCa over
calling ``scipy.stats.bootstrap`` on the same problem (on a 1,000-task subset, which scipy finishes in
reasonable time). The intervals are BCa ∪ the pseudo-case interval (design note 006); the bootstrap
draws multinomial counts per distinct unit, so 10,000 tasks with 17 distinct (n, c) cost milliseconds.
The design target (docs: DESIGN.md, "Performance bar") is "in seconds"; the whole summary and
``passhat show`` are timed by ``bench/bench_summary.py``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from scipy.stats import bootstrap

from passhat.stats import estimate_matrix, suite_intervals

TASKS, TRIALS, RESAMPLES = 10_000, 16, 2000
KS = list(range(1, TRIALS + 1))


def timed(label: str, fn):
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    print(f"{label:<58} {seconds:7.3f} s")
    return result, seconds


def scipy_reference(matrix: np.ndarray) -> None:
    def ratio(sums, counts, axis=-1):
        return sums.sum(axis=axis) / counts.sum(axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bootstrap(
            (matrix.T, np.ones_like(matrix.T)),
            ratio,
            paired=True,
            axis=-1,
            n_resamples=RESAMPLES,
            batch=200,
            method="BCa",
            rng=np.random.default_rng(0),
        )


def main() -> None:
    rng = np.random.default_rng(0)
    successes = rng.binomial(TRIALS, rng.beta(4, 1.5, TASKS))
    counts = [(TRIALS, int(c)) for c in successes]
    groups = [f"family{t // 5}" for t in range(TASKS)]
    print(f"{TASKS} tasks × {TRIALS} trials, k = 1..{TRIALS}, {RESAMPLES} BCa resamples")

    hat, t_hat = timed(
        "per-task pass^k matrix (exact integers)", lambda: estimate_matrix(counts, KS, "pass_hat_k")
    )
    at, t_at = timed("per-task pass@k matrix (exact integers)", lambda: estimate_matrix(counts, KS, "pass_at_k"))
    _, t_i_hat = timed("intervals, pass^k curve (16 columns)", lambda: suite_intervals(hat, seed=1))
    _, t_i_at = timed("intervals, pass@k curve (16 columns)", lambda: suite_intervals(at, seed=1))
    both = np.hstack([hat, at])
    _, t_both = timed(
        "intervals, both curves on shared resamples (32 columns)", lambda: suite_intervals(both, seed=1)
    )
    timed(
        "intervals, both curves, 2,000 families of 5 (32 columns)",
        lambda: suite_intervals(both, groups, seed=1),
    )
    print(f"{'total: matrices + both curves with intervals':<58} {t_hat + t_at + t_both:7.3f} s")

    subset = both[:1000]
    _, ours = timed("subset 1,000 tasks × 32 columns: passhat", lambda: suite_intervals(subset, seed=1))
    _, theirs = timed(
        "subset 1,000 tasks × 32 columns: scipy.stats.bootstrap", lambda: scipy_reference(subset)
    )
    print(f"speed-up over scipy.stats.bootstrap on the subset: {theirs / ours:.0f}×")


if __name__ == "__main__":
    main()
