"""Coverage and width of suite intervals near the ceiling, over families and in the middle: the evidence for
design note 006.

Run: ``python bench/bench_coverage.py`` (≈ 3 min; ``--quick``: 300 replications, ≈ 1 min). Each
setting draws ``reps`` suites from a population with planted per-case pass rates, computes every method's
95 % interval for the suite pass^k (or pass@k) and reports the share that contains the population value
(coverage), the share of one-sided 95 % lower bounds above it (a false PASS of a ``pass_hat_k`` gate at
α = 0.05, "gate miss") and the median width.

Regimes:

- ``ceiling``: 20 (or 10, 40) cases × 16 trials, most cases always pass and the rest p ~ Beta(a, b) — so
  many of those also pass every trial in one run (the regime where BCa covered 0.82–0.84);
- ``families``: 4–20 families of 3–5 cases sharing their pass rate, resampled as groups;
- ``middle``: p ~ Beta(4, 1.5), Beta(2, 2), or half solved / 10 % hopeless / 40 % Beta(2, 2).

Methods: ``bca`` (passhat before issue 10: BCa over cases, with its t and Wilson fallbacks where BCa
is undefined), ``t`` (cluster-robust t over units), ``wilson_bd`` (Wilson at the estimate with n =
effective units: the Bhatia–Davis worst case), ``quasi_wilson`` (Wilson with a design effect, n =
x̄(1 − x̄)/SE² df-adjusted: Korn & Graubard 1998), ``bca_jeffreys`` (BCa ∪ the pseudo-case interval with
half a pass and half a fail, Jeffreys' prior: tried first), ``pseudocase`` (the pseudo-case interval
alone: a pseudo-pass and a pseudo-fail) and ``passhat`` (what ``suite_intervals`` reports: BCa ∪
pseudo-case).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np
from scipy.special import ndtri
from scipy.stats import t as student_t

from passhat.stats import suite_intervals, wilson_score
from passhat.stats._resample import bca_ratio, resampling_units, unit_totals
from passhat.stats.passk import pass_at_k, pass_hat_k
from passhat.stats.pseudocase import pseudocase_interval

Draw = Callable[[np.random.Generator, int], np.ndarray]


def mixture(solved: float, a: float, b: float, hopeless: float = 0.0) -> Draw:
    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        u = rng.random(size)
        return np.where(u < solved, 1.0, np.where(u < solved + hopeless, 0.0, rng.beta(a, b, size)))
    return draw


def truth(draw: Draw, k: int, kind: str) -> float:
    p = draw(np.random.default_rng(99), 2_000_000)
    return float(np.mean(p**k)) if kind == "hat" else float(np.mean(1 - (1 - p) ** k))


def methods(values: np.ndarray, groups: list[str] | None, conf: float, seed: int) -> dict[str, np.ndarray]:
    """(reps, 2) bounds per method; ``values`` is cases × reps, one replication per column."""
    units = resampling_units(groups, values.shape[0])
    sums, counts = unit_totals(values, units)
    u, n = sums.shape[0], counts.sum(axis=0)
    est = sums.sum(axis=0) / n
    se = np.sqrt(u / (u - 1) * ((sums - est * counts) ** 2).sum(axis=0)) / n
    tq, z = student_t.ppf(0.5 + conf / 2, u - 1), ndtri(0.5 + conf / 2)
    effective = n[0] ** 2 / (counts[:, 0] ** 2).sum()
    out = {}
    _, low, high, _ = bca_ratio(sums, counts, rng=np.random.default_rng(seed), confidence=conf, n_resamples=1000)
    # passhat before issue 10: BCa; where it is undefined, t, else Wilson on the units at the estimate.
    before = [(lo, hi) if np.isfinite(lo) and np.isfinite(hi) else (e - tq * s, e + tq * s) if s > 1e-12
              else wilson_score(float(np.clip(e, 0, 1)), u, conf) for lo, hi, e, s in zip(low, high, est, se, strict=True)]
    out["bca"] = np.array(before)
    out["t"] = np.column_stack([est - tq * se, est + tq * se])
    out["wilson_bd"] = np.array([wilson_score(float(np.clip(e, 0, 1)), effective, conf) for e in est])
    quasi = []
    for e, s in zip(est, se, strict=True):
        if s <= 1e-12 or not 0 < e < 1:
            quasi.append(wilson_score(float(np.clip(e, 0, 1)), effective, conf))
        else:
            quasi.append(wilson_score(float(e), e * (1 - e) / s**2 * (z / tq) ** 2, conf))
    out["quasi_wilson"] = np.array(quasi)
    spread = (values.min(axis=0) != values.max(axis=0)) & np.isfinite(low) & np.isfinite(high)
    half = np.column_stack(pseudocase_interval(sums, counts, conf, ((0.0, 0.5), (1.0, 0.5))))
    out["bca_jeffreys"] = np.where(spread[:, None], np.column_stack([np.minimum(low, half[:, 0]),
                                                                     np.maximum(high, half[:, 1])]), half)
    out["pseudocase"] = np.column_stack(pseudocase_interval(sums, counts, conf))
    out["passhat"] = np.array([(iv.low, iv.high) for iv in suite_intervals(values, groups, seed=seed, confidence=conf,
                                                                          n_resamples=1000)])
    return out


def setting(regime: str, label: str, draw: Draw, cases: int, trials: int, k: int, kind: str, reps: int, seed: int,
            family: int = 1) -> list[dict[str, float | str]]:
    rng = np.random.default_rng(seed)
    units = cases // family
    p = np.repeat(draw(rng, units * reps).reshape(units, reps), family, axis=0)
    estimator = pass_hat_k if kind == "hat" else pass_at_k
    table = np.array([estimator(trials, c, k) for c in range(trials + 1)])
    values = table[rng.binomial(trials, p)]
    groups = [f"f{i // family}" for i in range(cases)] if family > 1 else None
    true = truth(draw, k, kind)
    two, one = methods(values, groups, 0.95, seed), methods(values, groups, 0.90, seed)
    rows = []
    for m, iv in two.items():
        rows.append({"regime": regime, "setting": f"{label} T={cases} n={trials} pass{'^' if kind == 'hat' else '@'}{k}",
                     "method": m, "cover": float(np.mean((iv[:, 0] <= true) & (true <= iv[:, 1]))),
                     "gate_miss": float(np.mean(one[m][:, 0] > true)), "width": float(np.median(iv[:, 1] - iv[:, 0]))})
    return rows


def grid(reps: int) -> list[tuple]:
    out = []
    ceilings = [("80% solved, rest Beta(9,1)", mixture(0.8, 9, 1)), ("90% solved, rest Beta(4,1)", mixture(0.9, 4, 1)),
                ("50% solved, rest Beta(19,1)", mixture(0.5, 19, 1)), ("80% solved, rest Beta(2,2)", mixture(0.8, 2, 2)),
                ("95% solved, rest Beta(2,2)", mixture(0.95, 2, 2))]
    for cases in (10, 20, 40):
        for label, draw in ceilings:
            for trials, k, kind in ((16, 1, "hat"), (16, 4, "hat"), (16, 16, "hat"), (4, 1, "hat"), (8, 2, "at")):
                out.append(("ceiling", label, draw, cases, trials, k, kind, reps, 1))
    middles = [("Beta(4,1.5)", mixture(0, 4, 1.5)), ("Beta(2,2)", mixture(0, 2, 2)),
               ("50% solved, 10% hopeless, Beta(2,2)", mixture(0.5, 2, 2, 0.1))]
    for cases in (20, 60):
        for label, draw in middles:
            for trials, k, kind in ((16, 1, "hat"), (16, 4, "hat"), (16, 16, "hat"), (4, 1, "hat"), (8, 2, "at"),
                                    (1, 1, "hat")):
                out.append(("middle", label, draw, cases, trials, k, kind, reps, 1))
    for families, size in ((4, 5), (5, 4), (8, 3), (6, 5), (12, 3), (20, 3)):
        for label, draw in (("Beta(4,1.5)", mixture(0, 4, 1.5)), ("80% solved, rest Beta(2,2)", mixture(0.8, 2, 2)),
                            ("80% solved, rest Beta(9,1)", mixture(0.8, 9, 1))):
            for trials, k in ((8, 1), (8, 4), (8, 8)):
                out.append(("families", f"{families}×{size} {label}", draw, families * size, trials, k, "hat", reps,
                            size))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="300 replications per setting")
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--verbose", action="store_true", help="one line per setting")
    args = parser.parse_args()
    reps = 300 if args.quick else args.reps
    start = time.perf_counter()
    rows: list[dict[str, float | str]] = []
    for i, (regime, label, draw, cases, trials, k, kind, r, family) in enumerate(grid(reps)):
        got = setting(regime, label, draw, cases, trials, k, kind, r, seed=1000 + i, family=family)
        rows += got
        if args.verbose:
            print(f"{got[0]['setting']:<60} " + " ".join(f"{x['method']} {x['cover']:.3f}" for x in got), flush=True)
    print(f"{reps} replications per setting, 1,000 resamples, {time.perf_counter() - start:.0f} s\n")
    names = ["bca", "t", "wilson_bd", "quasi_wilson", "bca_jeffreys", "pseudocase", "passhat"]
    by: dict[tuple[str, str], list[dict[str, float | str]]] = defaultdict(list)
    for row in rows:
        by[(str(row["regime"]), str(row["method"]))].append(row)
    print(f"{'regime':<9} {'method':<13} {'settings':>8} {'cover mean':>10} {'min':>6} {'<0.94':>6} "
          f"{'gate miss mean':>14} {'max':>6} {'median width':>12} {'width / bca':>11}")
    for regime in ("ceiling", "families", "middle"):
        bca_width = float(np.median([float(r["width"]) for r in by[(regime, "bca")]]))
        for m in names:
            got = by[(regime, m)]
            cover = np.array([float(r["cover"]) for r in got])
            miss = np.array([float(r["gate_miss"]) for r in got])
            width = float(np.median([float(r["width"]) for r in got]))
            print(f"{regime:<9} {m:<13} {len(got):>8} {cover.mean():>10.3f} {cover.min():>6.3f} "
                  f"{int((cover < 0.94).sum()):>6} {miss.mean():>14.3f} {miss.max():>6.3f} {width:>12.3f} "
                  f"{width / bca_width:>11.2f}")
        print()


if __name__ == "__main__":
    main()
