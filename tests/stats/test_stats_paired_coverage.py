"""Coverage of the paired interval by simulation, against the exact mean difference of a known population.

A small version of ``bench/paired_interval_stats.py`` (docs/design/004-paired-intervals.md): agent-like
suites where half the tasks always pass, 10 % never do, and the candidate changes only some tasks, so
most per-case differences are exactly 0 and the rest are discrete. Each replication is one column of
``paired_differences``, so a thousand comparisons cost one call.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import quad
from scipy.stats import beta

from passhat.stats import paired_differences
from passhat.stats.passk import pass_hat_k

HIT = 0.15
"""Share of tasks the candidate makes worse (pass rate halved), and again of tasks it makes better."""


def population(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-task pass rates (base, candidate): 50 % solved, 10 % hopeless, 40 % Beta(2, 2); then the change."""
    u, v = rng.random(size), rng.random(size)
    base = np.where(u < 0.5, 1.0, np.where(u < 0.6, 0.0, rng.beta(2, 2, size)))
    cand = np.where(v < HIT, base / 2, np.where(v < 2 * HIT, (1 + base) / 2, base))
    return base, cand


def true_delta(k: int) -> float:
    """E[p_cand^k − p_base^k] over the population, by exact integration over the Beta(2, 2) part."""
    def change(p: float) -> float:
        return HIT * ((p / 2) ** k - p**k) + HIT * (((1 + p) / 2) ** k - p**k)

    middle = quad(lambda p: change(p) * beta.pdf(p, 2, 2), 0, 1)[0]
    return 0.5 * change(1.0) + 0.1 * change(0.0) + 0.4 * middle


def simulate(cases: int, trials: int, k: int, reps: int, seed: int, family: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """cases × reps matrices of per-case pass^k (each column one replicated comparison); families share rates."""
    rng = np.random.default_rng(seed)
    base_p, cand_p = (np.repeat(x.reshape(cases // family, reps), family, axis=0)
                      for x in population(rng, cases // family * reps))
    table = np.array([pass_hat_k(trials, c, k) for c in range(trials + 1)])
    return table[rng.binomial(trials, base_p)], table[rng.binomial(trials, cand_p)]


def coverage(base: np.ndarray, cand: np.ndarray, truth: float, **kw: object) -> tuple[float, float]:
    """(two-sided coverage, share of intervals lying wholly above the truth: a one-sided miss)."""
    results = paired_differences(base, cand, **kw)  # type: ignore[arg-type]
    low, high = np.array([r.low for r in results]), np.array([r.high for r in results])
    return float(np.mean((low <= truth) & (truth <= high))), float(np.mean(low > truth))


def test_the_reported_interval_keeps_nominal_coverage() -> None:
    # t ∪ pseudo-case (the default) and BCa ∪ pseudo-case: the paired BCa alone covered 0.912 here.
    base, cand = simulate(cases=30, trials=4, k=1, reps=1000, seed=1)
    truth = true_delta(1)
    t_cover, t_low_miss = coverage(base, cand, truth)
    bca_cover, _ = coverage(base, cand, truth, interval="bca", n_resamples=1000)
    assert 0.93 <= t_cover <= 0.985, t_cover  # 0.960
    assert t_low_miss <= 0.045
    assert bca_cover >= 0.93, bca_cover


def test_binary_metric_uses_tango_and_covers() -> None:
    # pass^4 with 4 trials: each case fully passes or not, a paired 2×2 table per comparison.
    base, cand = simulate(cases=30, trials=4, k=4, reps=1000, seed=2)
    results = paired_differences(base, cand, binary=[True] * base.shape[1])
    assert {r.method for r in results} == {"tango_pseudocase"}
    truth = true_delta(4)
    covered = np.mean([r.low <= truth <= r.high for r in results])
    assert 0.93 <= covered <= 0.99, covered


def test_clustered_interval_covers_when_families_move_together() -> None:
    # 16 families of 3 cases sharing their pass rates (and the candidate's change): the cluster-robust
    # t-interval over families covers; treating the 48 cases as independent does not.
    base, cand = simulate(cases=48, trials=4, k=1, reps=1000, seed=3, family=3)
    groups = [f"family{i // 3}" for i in range(48)]
    truth = true_delta(1)
    grouped, _ = coverage(base, cand, truth, groups=groups)
    naive, _ = coverage(base, cand, truth)
    assert 0.92 <= grouped <= 0.995, grouped  # 0.989: the pseudo-case weighs more over 16 units
    assert naive < grouped - 0.04, (naive, grouped)
