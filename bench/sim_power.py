"""Power where it was lost (issue 22 item 5), before and after, with the false-positive rates that must not move.

Run: ``python bench/sim_power.py`` (≈ 4 CPU-minutes; ``--reps 150`` for a look). Runs are simulated per
case (binomial trials at planted pass rates) and fed to the statistics ``passhat compare`` and the
``no_new_failures`` rule call. Every share is printed with its Monte Carlo standard error.

1. ``passhat compare`` at 20 cases: a uniform 5-point drop (every case's pass rate p → p − 0.05; cases at
   0 cannot drop, so the true mean change is printed), pass^1 and pass^k with k = n/2. Share of
   comparisons reported as a change at two-sided 0.05: ``before`` is the interval excluding 0 (its
   inversion was the p-value before issue 22: t or Tango ∪ the pseudo-case interval; now ``p_interval``),
   ``now`` is ``p_value``, the within-case permutation test. Under no change (the same p in both runs)
   both must stay ≤ 0.05.
2. ``no_new_failures`` at 150 cases: the one (or three) most reliable cases break completely (p → 0) or
   fall to p = 0.5. ``before``: Fisher per case, Benjamini–Hochberg over Tarone's testable cases; ``now``:
   ``stats.drop_test``. ``chance`` is the share of unchanged reruns in which some case passes every
   baseline trial and fails every candidate trial: a rule that FAILed on one complete break would FAIL
   an unchanged agent at least that often, so no valid test catches a single break much more often
   than α / chance.
3. The MDE ``passhat compare`` reports for two runs of the same agent (median), and the share of
   comparisons that detect a change of exactly that size, by the test the MDE is for (nominal 0.80):
   ``before``, the worst-shape bound of issue 12 with the interval's test; ``now``, the uniform-drop MDE
   with the permutation test. Each is tried on a uniform drop and on a concentrated change (a share of
   cases breaking completely).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np
from scipy.stats import false_discovery_control

from passhat.stats import detectable_change, drop_test, fisher_drop, paired_differences
from passhat.stats.passk import pass_hat_k
from passhat.stats.permutation import permutation_test, uniform_drop_mde

Draw = Callable[[np.random.Generator, int], np.ndarray]


def realistic(rng: np.random.Generator, size: int) -> np.ndarray:
    """Half the cases always pass, 10 % never do, the rest p ~ Beta(2, 2)."""
    u = rng.random(size)
    return np.where(u < 0.5, 1.0, np.where(u < 0.6, 0.0, rng.beta(2, 2, size)))


def strong(rng: np.random.Generator, size: int) -> np.ndarray:
    """80 % of cases always pass, the rest p ~ Beta(9, 1)."""
    return np.where(rng.random(size) < 0.8, 1.0, rng.beta(9, 1, size))


def middle(rng: np.random.Generator, size: int) -> np.ndarray:
    """p ~ Beta(4, 1.5) for every case."""
    return rng.beta(4, 1.5, size)


POPULATIONS: dict[str, Draw] = {"realistic": realistic, "strong": strong, "middle": middle}


def se(share: float, reps: int) -> float:
    return math.sqrt(max(share * (1 - share), 1e-12) / reps)


def fmt(share: float, reps: int) -> str:
    return f"{share:.3f} ±{se(share, reps):.3f}"


def values(counts: np.ndarray, trials: int, k: int) -> np.ndarray:
    table = np.array([pass_hat_k(trials, c, k) for c in range(trials + 1)])
    return table[counts]


def compare_study(reps: int) -> None:
    print("1. compare at 20 cases: share of comparisons reporting a change (two-sided 0.05; ± one MC SE)")
    print(f"{'population':<10} {'trials':>6} {'metric':<7} {'true Δ':>7} {'drop: before':>15} {'now':>15} "
          f"{'no change: before':>18} {'now':>15}")
    rng = np.random.default_rng(21)
    cases = 20
    for name, draw in POPULATIONS.items():
        big = draw(np.random.default_rng(99), 1_000_000)
        for trials in (4, 8, 16):
            for k in sorted({1, trials // 2}):
                true = float(np.mean(np.clip(big - 0.05, 0, 1) ** k - big**k))
                n = np.full(cases, trials)
                hits = np.zeros((2, 2))  # (drop, none) × (before, now)
                for which, shift in ((0, 0.05), (1, 0.0)):
                    p = np.stack([draw(rng, cases) for _ in range(reps)], axis=1)
                    cb = rng.binomial(trials, p)
                    cc = rng.binomial(trials, np.clip(p - shift, 0, 1))
                    res = paired_differences(values(cb, trials, k), values(cc, trials, k), binary=[k == trials] * reps)
                    hits[which, 0] = np.mean([r.low > 0 or r.high < 0 for r in res])
                    hits[which, 1] = np.mean([permutation_test(n, cb[:, r], n, cc[:, r], [("pass_hat_k", k)],
                                                               rng=rng).p_value[0] < 0.05 for r in range(reps)])
                print(f"{name:<10} {trials:>6} pass^{k:<2} {true:>+7.3f} {fmt(hits[0, 0], reps):>15} "
                      f"{fmt(hits[0, 1], reps):>15} {fmt(hits[1, 0], reps):>18} {fmt(hits[1, 1], reps):>15}", flush=True)


def tarone_bh(p: np.ndarray, p_min: np.ndarray, alpha: float) -> np.ndarray:
    """The rule before issue 22: BH over the cases whose margins allow p ≤ α."""
    testable = p_min <= alpha
    out = np.zeros(p.shape, dtype=bool)
    if testable.any():
        out[testable] = false_discovery_control(p[testable], method="bh") <= alpha
    return out


def new_failures_study(reps: int) -> None:
    print("\n2. no_new_failures at 150 cases: share of run pairs that FAIL (± one MC SE)")
    print(f"{'population':<10} {'trials':>6} {'change':<18} {'before':>14} {'now':>14} {'chance':>14}")
    rng = np.random.default_rng(22)
    cases = 150
    for name, draw in POPULATIONS.items():
        for trials in (4, 8):
            for change, broken, to in (("none", 0, 1.0), ("1 case → 0", 1, 0.0), ("3 cases → 0", 3, 0.0),
                                       ("1 case → 0.5", 1, 0.5), ("3 cases → 0.5", 3, 0.5)):
                hits = np.zeros(3)
                n = np.full(cases, trials)
                for _ in range(reps):
                    p = draw(rng, cases)
                    q = p.copy()
                    q[np.argsort(-p, kind="stable")[:broken]] = to  # the most reliable cases (p = 1 where any)
                    cb, cc = rng.binomial(trials, p), rng.binomial(trials, q)
                    pv, pm = fisher_drop(cb, n, cc, n)
                    hits += [tarone_bh(pv, pm, 0.05).any(), drop_test(pv, pm, 0.05, rng=rng).rejected.any(),
                             bool(np.any((cb == trials) & (cc == 0)))]
                share = hits / reps
                chance = fmt(share[2], reps) if broken == 0 else ""
                print(f"{name:<10} {trials:>6} {change:<18} {fmt(share[0], reps):>14} {fmt(share[1], reps):>14} "
                      f"{chance:>14}", flush=True)


def drop_to(big: np.ndarray, k: int, target: float) -> float:
    """The uniform drop s of every p that moves the population's mean pass^k by ``target``."""
    lo, hi = 0.0, 1.0
    for _ in range(40):
        s = (lo + hi) / 2
        lo, hi = (s, hi) if float(np.mean(big**k - np.clip(big - s, 0, 1) ** k)) < target else (lo, s)
    return hi


def mde_study(reps: int) -> None:
    print("\n3. The reported MDE and the power of a change that size (nominal 0.80; ± one MC SE)")
    print(f"{'population':<10} {'cases':>5} {'trials':>6} {'k':>2} {'MDE before':>10} {'uniform':>14} "
          f"{'concentr.':>14} {'MDE now':>8} {'uniform':>14} {'concentr.':>14}")
    rng = np.random.default_rng(23)
    for name, draw in (("realistic", realistic), ("middle", middle)):
        big = draw(np.random.default_rng(99), 1_000_000)
        for cases, trials, k in ((20, 8, 1), (30, 8, 1), (30, 16, 1), (30, 8, 4), (60, 4, 1)):
            n = np.full(cases, trials)
            p = np.stack([draw(rng, cases) for _ in range(reps)], axis=1)
            cb, cc = rng.binomial(trials, p), rng.binomial(trials, p)
            res = paired_differences(values(cb, trials, k), values(cc, trials, k))
            before = float(np.median([detectable_change((r.se or 0.0) * math.sqrt(r.n_units), r.n_units) or 1.0
                                      for r in res]))
            now = float(np.median([uniform_drop_mde(n, cb[:, r], n, cc[:, r], "pass_hat_k", k) or 1.0
                                   for r in range(reps)]))
            row = [name, cases, trials, k]
            for mde, test in ((before, "interval"), (now, "permutation")):
                for shape in ("uniform", "concentrated"):
                    p0 = np.stack([draw(rng, cases) for _ in range(reps)], axis=1)
                    if shape == "uniform":
                        p1 = np.clip(p0 - drop_to(big, k, mde), 0, 1)
                    else:  # a share of cases breaks completely: share · E[p^k] = MDE
                        p1 = np.where(rng.random(p0.shape) < min(1.0, mde / float(np.mean(big**k))), 0.0, p0)
                    cb, cc = rng.binomial(trials, p0), rng.binomial(trials, p1)
                    if test == "interval":
                        got = paired_differences(values(cb, trials, k), values(cc, trials, k), binary=[k == trials] * reps)
                        share = float(np.mean([r.low > 0 or r.high < 0 for r in got]))
                    else:
                        share = float(np.mean([permutation_test(n, cb[:, r], n, cc[:, r], [("pass_hat_k", k)],
                                                                rng=rng).p_value[0] < 0.05 for r in range(reps)]))
                    row.append(share)
            print(f"{row[0]:<10} {row[1]:>5} {row[2]:>6} {row[3]:>2} {before:>10.3f} {fmt(row[4], reps):>14} "
                  f"{fmt(row[5], reps):>14} {now:>8.3f} {fmt(row[6], reps):>14} {fmt(row[7], reps):>14}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args()
    start = time.process_time()
    compare_study(args.reps)
    new_failures_study(args.reps)
    mde_study(max(100, args.reps // 2))
    print(f"\n{args.reps} replications per row (section 3: {max(100, args.reps // 2)}), "
          f"{time.process_time() - start:.0f} CPU-s")


if __name__ == "__main__":
    main()
