"""Coverage and power of intervals for a mean paired difference, by simulation: the evidence for design 004.

Run: ``python bench/paired_interval_stats.py`` (≈ 20 min on one core; ``--quick``: 500 replications and
500 resamples, ≈ 2 min; ``--sizes 120,240`` for larger suites; ``--grouped``: families of 3 cases;
``--suite``: the same populations for one run's suite value, where BCa stays).
Prints one line per setting and a summary per method: two-sided 95 % coverage, the one-sided misses
of the 90 % interval (the gate's α = 0.05 bounds: "low" = the whole interval above the truth, a false
PASS for non-inferiority), the share of 95 % intervals excluding 0 (false alarms under no change, power
otherwise) and the median width.

Populations are agent-like: half the tasks always pass, 10 % never do, the rest have p ~ Beta(2, 2);
the candidate changes only some tasks, so most per-case differences are exactly 0 and the rest are
discrete (multiples of 1/n for pass^1). The truth is E[p_cand^k − p_base^k] over the population (the
super-population estimand the intervals target), computed from 4 million draws.

Methods: ``t``, ``tango`` (0/1 metrics) and ``bca`` are passhat's own (``stats.paired_differences``),
``passhat`` is what ``passhat compare`` reports (Tango for 0/1 metrics, t otherwise);
``pct`` (percentile bootstrap), ``boot_t`` (studentised bootstrap, equal-tailed), ``boot_t_sym``
(symmetric studentised), ``signflip`` (the sign-flip permutation test inverted: quantiles of
random-half-subset means, Hartigan 1969) and ``t_hall`` (Hall 1992's skewness-corrected t) are written
here, on the same resampling units. Every method gets passhat's fallback when the differences have no
spread (all 0: ± the Wilson bound for 0 of U).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from scipy.special import comb
from scipy.stats import t as student_t

from passhat.stats import paired_differences, suite_intervals, wilson_score

Population = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


def _mixture(rng: np.random.Generator, size: int) -> np.ndarray:
    u = rng.random(size)
    return np.where(u < 0.5, 1.0, np.where(u < 0.6, 0.0, rng.beta(2, 2, size)))


def _null_beta(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    p = rng.beta(3, 1.5, size)
    return p, p


def _regress(share: float, fn: Callable[[np.ndarray], np.ndarray]) -> Population:
    def draw(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        base = _mixture(rng, size)
        return base, np.where(rng.random(size) < share, fn(base), base)
    return draw


def _mixed(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    base, v = _mixture(rng, size), rng.random(size)
    return base, np.where(v < 0.15, base / 2, np.where(v < 0.3, (1 + base) / 2, base))


POPULATIONS: dict[str, Population] = {
    "null_solved": lambda rng, size: (lambda p: (p, p))(_mixture(rng, size)),
    "null_beta": _null_beta,
    "regress_few": _regress(0.15, lambda p: p / 2),           # 15 % of tasks lose half their pass rate
    "regress_rare": _regress(0.05, lambda p: 0 * p),          # 5 % of tasks break completely
    "improve_broad": _regress(1.0, lambda p: p + 0.15 * (1 - p)),
    "mixed": _mixed,                                          # 15 % halve, 15 % close half the gap
}


def truth(name: str, k: int) -> float:
    base, cand = POPULATIONS[name](np.random.default_rng(123), 4_000_000)
    return float(np.mean(cand**k - base**k))


def local_methods(sums: np.ndarray, size: np.ndarray, rng: np.random.Generator, conf: float,
                  resamples: int) -> dict[str, np.ndarray]:
    """The rejected alternatives, per replication (rows of unit sums ``sums``; ``size`` cases per unit)."""
    reps, units = sums.shape
    total = size.sum()
    theta = sums.sum(1) / total
    se = np.sqrt(units / (units - 1) * ((sums - theta[:, None] * size) ** 2).sum(1)) / total
    a = (1 - conf) / 2
    means, tstar, flips = (np.empty((reps, resamples)) for _ in range(3))
    offset = np.arange(resamples)[:, None] * units
    for r in range(reps):
        idx = rng.integers(0, units, (resamples, units)) + offset
        w = np.bincount(idx.ravel(), minlength=resamples * units).reshape(resamples, units).astype(float)
        n_star = w @ size
        m = (w @ sums[r]) / n_star
        ss = w @ sums[r] ** 2 - 2 * m * (w @ (sums[r] * size)) + m * m * (w @ size**2)
        se_star = np.sqrt(units / (units - 1) * np.maximum(ss, 0)) / n_star
        with np.errstate(divide="ignore", invalid="ignore"):
            ts = (m - theta[r]) / se_star
        flat = se_star <= 1e-12
        ts[flat] = np.sign(m[flat] - theta[r]) * 1e6  # a resample without spread: the far tail
        means[r], tstar[r] = m, ts
        half = (rng.random((resamples, units)) < 0.5).astype(float)
        den = half @ size
        flips[r] = np.where(den > 0, (half @ sums[r]) / np.where(den > 0, den, 1), np.nan)
    out = {"pct": np.quantile(means, [a, 1 - a], axis=1).T}
    q = np.quantile(tstar, [a, 1 - a], axis=1).T
    out["boot_t"] = np.column_stack([theta - q[:, 1] * se, theta - q[:, 0] * se])
    qs = np.quantile(np.abs(tstar), conf, axis=1)
    out["boot_t_sym"] = np.column_stack([theta - qs * se, theta + qs * se])
    out["signflip"] = np.nanquantile(flips, [a, 1 - a], axis=1).T
    x = (sums - theta[:, None] * size) * (units / total)
    with np.errstate(invalid="ignore", divide="ignore"):
        gamma = np.nan_to_num((x**3).mean(1) / (x**2).mean(1) ** 1.5)
    sa, sb, c = gamma / (3 * np.sqrt(units)), gamma / (6 * np.sqrt(units)), student_t.ppf(1 - a, units - 1)

    def g_inverse(y: float) -> np.ndarray:
        # Hall's monotone transform g(t) = t + a t² + a² t³/3 + b, inverted in closed form.
        with np.errstate(invalid="ignore", divide="ignore"):
            inv = (np.cbrt(1 + 3 * sa * (y - sb)) - 1) / sa
        return np.where(np.abs(sa) < 1e-12, y - sb, inv)

    out["t_hall"] = np.column_stack([theta - se * g_inverse(c), theta - se * g_inverse(-c)])
    no_spread = se <= 1e-12
    bound = wilson_score(0.0, units, conf)[1]
    for iv in out.values():
        iv[no_spread] = np.column_stack([theta[no_spread] - bound, theta[no_spread] + bound])
    return out


def passhat_methods(base: np.ndarray, cand: np.ndarray, groups: list[str] | None, binary: bool, conf: float,
                    seed: int, resamples: int) -> dict[str, np.ndarray]:
    """passhat's t, BCa (seeded per chunk of 100 replications) and, for 0/1 metrics, Tango; one column each."""
    def bounds(start: int = 0, **kw: object) -> list[tuple[float, float]]:
        chunk = slice(start, start + 100) if "n_resamples" in kw else slice(None)
        results = paired_differences(base[:, chunk], cand[:, chunk], groups, confidence=conf,  # type: ignore[arg-type]
                                     seed=seed + start, **kw)
        return [(r.low, r.high) for r in results]

    out = {"t": np.array(bounds()),
           "bca": np.array([b for start in range(0, base.shape[1], 100)
                            for b in bounds(start, interval="bca", n_resamples=resamples)])}
    out["passhat"] = out["t"]
    if binary and groups is None:
        out["tango"] = out["passhat"] = np.array(bounds(binary=[True] * base.shape[1]))
    return out


def cell(name: str, cases: int, trials: int, k: int, reps: int, family: int, rng: np.random.Generator,
         resamples: int) -> list[dict[str, float | str | int]]:
    units = cases // family
    p_base, p_cand = POPULATIONS[name](rng, units * reps)
    p_base, p_cand = (np.repeat(p.reshape(reps, units), family, axis=1) for p in (p_base, p_cand))
    base = comb(rng.binomial(trials, p_base), k) / comb(trials, k)  # per-case pass^k, reps × cases
    cand = comb(rng.binomial(trials, p_cand), k) / comb(trials, k)
    groups = [f"f{i // family}" for i in range(cases)] if family > 1 else None
    sums = (cand - base).reshape(reps, units, family).sum(-1)
    true = truth(name, k)
    rows = []
    for conf in (0.95, 0.90):
        methods = passhat_methods(base.T, cand.T, groups, k == trials, conf, int(rng.integers(1 << 30)), resamples)
        methods |= local_methods(sums, np.full(units, float(family)), rng, conf, resamples)
        for method, iv in methods.items():
            low_miss, high_miss = float(np.mean(iv[:, 0] > true)), float(np.mean(iv[:, 1] < true))
            rows.append({"population": name, "cases": cases, "trials": trials, "k": k, "family": family,
                         "conf": conf, "method": method, "true": true, "cover": 1 - low_miss - high_miss,
                         "low_miss": low_miss, "high_miss": high_miss,
                         "excludes_0": float(np.mean((iv[:, 0] > 0) | (iv[:, 1] < 0))),
                         "width": float(np.median(iv[:, 1] - iv[:, 0]))})
    return rows


def summary(rows: list[dict[str, float | str | int]], label: str, keep: Callable[[dict], bool]) -> None:
    methods = sorted({str(r["method"]) for r in rows})
    print(f"\n{label}\n{'method':11s} {'cells':>5s} {'cover95':>7s} {'min':>6s} {'<0.94':>5s} | "
          f"{'gate low miss mean/max':>22s} | {'high miss':>9s} | {'excl 0':>6s} {'width':>6s}")
    for m in methods:
        a = [r for r in rows if r["method"] == m and r["conf"] == 0.95 and keep(r)]
        b = [r for r in rows if r["method"] == m and r["conf"] == 0.90 and keep(r)]
        if not a:
            continue
        cover = np.array([r["cover"] for r in a], dtype=float)
        low = np.array([r["low_miss"] for r in b], dtype=float)
        print(f"{m:11s} {len(a):5d} {cover.mean():7.3f} {cover.min():6.3f} {int((cover < 0.94).sum()):5d} | "
              f"{low.mean():12.3f} / {low.max():.3f} | {np.mean([r['high_miss'] for r in b]):9.3f} | "
              f"{np.mean([r['excludes_0'] for r in a]):6.3f} {np.mean([r['width'] for r in a]):6.3f}")


def suite_check(reps: int, resamples: int, rng: np.random.Generator) -> None:
    """The same populations for ONE run's suite value: passhat's BCa (``suite_intervals``) against t.

    Why paired differences are special: suite values do not pile up at one value with a few discrete
    exceptions, and there BCa is as good as statistics.md §3.3 says.
    """
    print("\nsuite value (one run), coverage of 95 %: BCa (passhat) / t")
    covers: dict[str, list[float]] = {"bca": [], "t": []}
    for name in ("null_solved", "null_beta"):
        for cases in (15, 30, 60):
            for trials in (2, 4, 8):
                for k in sorted({1, trials}):
                    p = POPULATIONS[name](rng, cases * reps)[0].reshape(cases, reps)
                    values = comb(rng.binomial(trials, p), k) / comb(trials, k)
                    true = float(np.mean(POPULATIONS[name](np.random.default_rng(123), 4_000_000)[0] ** k))
                    bca = np.array([(iv.low, iv.high) for start in range(0, reps, 100)
                                    for iv in suite_intervals(values[:, start:start + 100], seed=start,
                                                              n_resamples=resamples)])
                    mean, se = values.mean(0), values.std(0, ddof=1) / np.sqrt(cases)
                    half = student_t.ppf(0.975, cases - 1) * se
                    t = np.column_stack([mean - half, mean + half])
                    row = {m: float(np.mean((iv[:, 0] <= true) & (true <= iv[:, 1]))) for m, iv in (("bca", bca), ("t", t))}
                    for m in covers:
                        covers[m].append(row[m])
                    print(f"{name:13s} T={cases:<3d} n={trials} k={k}  bca {row['bca']:.3f}  t {row['t']:.3f}", flush=True)
    for m, c in covers.items():
        print(f"{m}: mean {np.mean(c):.3f}, min {np.min(c):.3f}, max {np.max(c):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="500 replications, 500 resamples")
    parser.add_argument("--sizes", default="15,30,60", help="numbers of cases, comma-separated")
    parser.add_argument("--grouped", action="store_true", help="families of 3 cases sharing their rates")
    parser.add_argument("--suite", action="store_true", help="only the one-run suite-value check")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    reps, resamples = (500, 500) if args.quick else (2000, 1000)
    family = 3 if args.grouped else 1
    sizes = [int(x) for x in args.sizes.split(",")]
    rng = np.random.default_rng(args.seed)
    if args.suite:
        suite_check(reps, resamples, rng)
        return
    rows: list[dict[str, float | str | int]] = []
    start = time.perf_counter()
    for name in POPULATIONS:
        for cases in sizes:
            for trials in (1, 2, 4, 8):
                for k in sorted({1, trials}):
                    got = cell(name, cases, trials, k, reps, family, rng, resamples)
                    rows += got
                    line = {str(r["method"]): r for r in got if r["conf"] == 0.95}
                    print(f"{name:13s} T={cases:<3d} n={trials} k={k} Δ={got[0]['true']:+.3f}  " + "  ".join(
                        f"{m} {r['cover']:.3f}" for m, r in sorted(line.items())), flush=True)
    print(f"\n{reps} replications per setting, {resamples} resamples, seed {args.seed}, "
          f"{time.perf_counter() - start:.0f} s")
    summary(rows, "all settings", lambda r: True)
    summary(rows, "no change (excl 0 = false alarms)", lambda r: r["true"] == 0)
    summary(rows, "changes (excl 0 = power)", lambda r: r["true"] != 0)
    summary(rows, "pass^1, n ≥ 2 (continuous-ish differences)", lambda r: r["k"] == 1 and r["trials"] > 1)
    summary(rows, "0/1 metrics (k = n)", lambda r: r["k"] == r["trials"])
    for cases in sizes:
        summary(rows, f"{cases} cases", lambda r, c=cases: r["cases"] == c)


if __name__ == "__main__":
    main()
