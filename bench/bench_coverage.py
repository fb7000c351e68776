"""Coverage, both tails and width of suite intervals near the ceiling, over families and in the middle, and
whether every simulated curve is monotone in k and holds its estimate: the evidence for design notes 006
and 026.

Run: ``python bench/bench_coverage.py`` (≈ 4 CPU-minutes; ``--reps 300`` for a look in about one). Each
setting draws ``reps`` suites from a population with planted per-case pass rates and computes every
method's two-sided 95 % interval for the suite pass^k (or pass@k). Reported per regime (mean and worst
setting):

- ``cover``: the share of intervals containing the population value (nominal 0.95);
- ``low miss``: the share whose lower bound is above it — a false PASS of a ``pass_hat_k`` bar there —
  and ``high miss``: the share whose upper bound is below it (a false FAIL). Each is nominally ≤ 0.025;
  the Monte Carlo error of one setting's tail share at 0.025 is ±0.005 at 1,000 replications;
- ``w/pct``, ``w/bca``: mean width relative to the percentile and the BCa bootstrap over cases;
- ``floor/pct``: the least mean width ANY interval can have that holds its estimate and keeps both tails
  ≤ α/2 for every population of cases, relative to the percentile bootstrap's. Add a share ε of
  hopeless cases (value 0) to any population F of mean μ: with probability (1 − ε)^U the U units drawn
  are all from F, and the truth is (1 − ε)μ. So under F a valid lower bound L must satisfy
  P(L > t) ≤ (α/2)(μ/t)^U for every t < μ, which caps E[L] at μ·a^{1/U}·U/(U − 1) − aμ/(U − 1) + a(1 − μ)
  (a = α/2); the mirror argument with cases that always pass bounds the upper end, and the two give
  E[width] ≥ 1 − (U·a^{1/U} − a)/(U − 1) − a, whatever F is: 0.101 at 20 units, 0.040 at 40. Where the
  floor exceeds 1.3× the bootstrap's width, no valid interval can be within 1.3× of it.

Methods: ``percentile`` and ``bca`` (the plain bootstrap over cases, groups resampled whole: 1,000
resamples), ``before`` (what passhat reported before issue 22: BCa ∪ the pseudo-case interval, design
note 006) and ``gaffke`` (what ``suite_intervals`` reports now: Gaffke's bounds, design note 026).

Curves: for the first ``--curve-reps`` suites of every setting the whole curve k = 1..n of pass^k and
pass@k is computed as ``summary.json`` does (one ``suite_intervals`` call, then ``coherent_curve``), and
the bench counts curves whose bounds are not monotone in k as the truth is, or whose interval excludes
its estimate: before the envelope (``raw``) and after it (``reported``, which must be 0). Some settings
have cases with missing trials (excluded for the largest k), and some 1, 2 or 3 families.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from passhat.stats import coherent_curve, estimate_matrix, suite_intervals
from passhat.stats._resample import bca_ratio, resampling_units, unit_totals
from passhat.stats.passk import pass_at_k, pass_hat_k
from passhat.stats.pseudocase import pseudocase_interval

Draw = Callable[[np.random.Generator, int], np.ndarray]
METHODS = ("percentile", "bca", "before", "gaffke")
CHUNK = 100
"""Replications per ``suite_intervals`` call: each chunk gets its own seed, so the Monte Carlo error of the
bounds is not shared by every replication of a setting."""


def mixture(solved: float, a: float, b: float, hopeless: float = 0.0) -> Draw:
    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        u = rng.random(size)
        return np.where(u < solved, 1.0, np.where(u < solved + hopeless, 0.0, rng.beta(a, b, size)))
    return draw


def truth(draw: Draw, k: int, kind: str) -> float:
    p = draw(np.random.default_rng(99), 2_000_000)
    return float(np.mean(p**k)) if kind == "hat" else float(np.mean(1 - (1 - p) ** k))


def width_floor(units: int, a: float = 0.025) -> float:
    """The least mean width of a two-sided interval valid for every population of ``units`` units (docstring)."""
    return 1 - (units * a ** (1 / units) - a) / (units - 1) - a if units > 1 else 1 - a


def bounds(values: np.ndarray, groups: list[str] | None, seed: int) -> dict[str, np.ndarray]:
    """(reps, 2) two-sided 95 % bounds per method; ``values`` is cases × reps, one replication per column."""
    units = resampling_units(groups, values.shape[0])
    sums, counts = unit_totals(values, units)
    _, low, high, dist = bca_ratio(sums, counts, rng=np.random.default_rng(seed), confidence=0.95, n_resamples=1000)
    est = sums.sum(axis=0) / counts.sum(axis=0)
    pct = np.quantile(dist, [0.025, 0.975], axis=0).T
    spread = (values.min(axis=0) != values.max(axis=0)) & np.isfinite(low) & np.isfinite(high)
    bca = np.where(spread[:, None], np.column_stack([low, high]), est[:, None])
    j_low, j_high = pseudocase_interval(sums, counts, 0.95)
    before = np.where(spread[:, None], np.column_stack([np.minimum(low, j_low), np.maximum(high, j_high)]),
                      np.column_stack([j_low, j_high]))
    gaffke = np.empty((values.shape[1], 2))
    for start in range(0, values.shape[1], CHUNK):
        part = values[:, start:start + CHUNK]
        gaffke[start:start + CHUNK] = [(iv.low, iv.high) for iv in suite_intervals(part, groups, seed=seed + start)]
    return {"percentile": pct, "bca": bca, "before": before, "gaffke": gaffke}


def curve_checks(p: np.ndarray, trials: np.ndarray, groups: list[str] | None, reps: int,
                 rng: np.random.Generator) -> np.ndarray:
    """Per suite: [raw not monotone, raw excludes estimate, reported not monotone, reported excludes estimate]."""
    out = np.zeros((reps, 4), dtype=bool)
    ks = list(range(1, int(trials.max()) + 1))
    for r in range(reps):
        counts = [(int(n), int(rng.binomial(n, q))) for n, q in zip(trials, p[:, r], strict=True)]
        matrix = np.hstack([estimate_matrix(counts, ks, "pass_hat_k"), estimate_matrix(counts, ks, "pass_at_k")])
        curve = suite_intervals(matrix, groups, seed=r)
        for offset, direction in ((0, "non_increasing"), (len(ks), "non_decreasing")):
            raw = curve[offset:offset + len(ks)]
            sign = 1 if direction == "non_increasing" else -1
            for col, ivs in ((0, raw), (2, coherent_curve(raw, direction))):  # type: ignore[arg-type]
                lows, highs = np.array([iv.low for iv in ivs]), np.array([iv.high for iv in ivs])
                out[r, col] |= bool(np.any(sign * np.diff(lows) > 1e-12) or np.any(sign * np.diff(highs) > 1e-12))
                out[r, col + 1] |= any(not iv.low <= iv.estimate <= iv.high for iv in ivs)
    return out


def setting(regime: str, label: str, draw: Draw, cases: int, trials: int, k: int, kind: str, reps: int, seed: int,
            family: int = 1, missing: float = 0.0, curve_reps: int = 0) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    units = -(-cases // family)
    p = np.repeat(draw(rng, units * reps).reshape(units, reps), family, axis=0)[:cases]
    estimator = pass_hat_k if kind == "hat" else pass_at_k
    table = np.array([estimator(trials, c, k) for c in range(trials + 1)])
    values = table[rng.binomial(trials, p)]
    groups = [f"f{i // family}" for i in range(cases)] if family > 1 else None
    true = truth(draw, k, kind)
    ivs = bounds(values, groups, seed)
    row: dict[str, object] = {"regime": regime, "setting": f"{label} T={cases} n={trials} "
                              f"pass{'^' if kind == 'hat' else '@'}{k}"}
    width_pct = float(np.mean(ivs["percentile"][:, 1] - ivs["percentile"][:, 0]))
    for m, iv in ivs.items():
        row[m] = {"cover": float(np.mean((iv[:, 0] <= true) & (true <= iv[:, 1]))),
                  "low_miss": float(np.mean(iv[:, 0] > true)), "high_miss": float(np.mean(iv[:, 1] < true)),
                  "width": float(np.mean(iv[:, 1] - iv[:, 0]))}
    row["floor"] = width_floor(units) / width_pct if width_pct > 0 else math.inf
    row["width_pct"], row["width_bca"] = width_pct, float(np.mean(ivs["bca"][:, 1] - ivs["bca"][:, 0]))
    if curve_reps:
        n_case = np.full(cases, trials)
        if missing:
            n_case[: max(1, int(missing * cases))] = max(1, trials - 2)  # their other trials hit infrastructure errors
        row["curves"] = curve_checks(p[:, :curve_reps], n_case, groups, curve_reps, rng)
    return row


def grid(reps: int, curve_reps: int) -> list[tuple]:
    out = []
    ceilings = [("80% solved, rest Beta(9,1)", mixture(0.8, 9, 1)), ("90% solved, rest Beta(4,1)", mixture(0.9, 4, 1)),
                ("50% solved, rest Beta(19,1)", mixture(0.5, 19, 1)), ("80% solved, rest Beta(2,2)", mixture(0.8, 2, 2)),
                ("95% solved, rest Beta(2,2)", mixture(0.95, 2, 2))]
    for cases in (10, 20, 40):
        for label, draw in ceilings:
            for trials, k, kind in ((16, 1, "hat"), (16, 4, "hat"), (16, 16, "hat"), (4, 1, "hat"), (8, 2, "at")):
                out.append(("ceiling", label, draw, cases, trials, k, kind, reps, 1, 0.0, curve_reps if k == 1 else 0))
    middles = [("Beta(4,1.5)", mixture(0, 4, 1.5)), ("Beta(2,2)", mixture(0, 2, 2)),
               ("50% solved, 10% hopeless, Beta(2,2)", mixture(0.5, 2, 2, 0.1))]
    for cases in (20, 60):
        for label, draw in middles:
            for trials, k, kind in ((16, 1, "hat"), (16, 4, "hat"), (16, 16, "hat"), (4, 1, "hat"), (8, 2, "at"),
                                    (1, 1, "hat")):
                out.append(("middle", label, draw, cases, trials, k, kind, reps, 1, 0.2 if trials == 16 else 0.0,
                            curve_reps if k == 1 and trials > 1 else 0))
    for families, size in ((4, 5), (5, 4), (8, 3), (6, 5), (12, 3), (20, 3)):
        for label, draw in (("Beta(4,1.5)", mixture(0, 4, 1.5)), ("80% solved, rest Beta(2,2)", mixture(0.8, 2, 2)),
                            ("80% solved, rest Beta(9,1)", mixture(0.8, 9, 1))):
            for trials, k in ((8, 1), (8, 4), (8, 8)):
                out.append(("families", f"{families}×{size} {label}", draw, families * size, trials, k, "hat", reps,
                            size, 0.0, curve_reps if k == 1 else 0))
    # 1–3 families: curves only (one or two units cannot support an interval worth reporting coverage for).
    for families in (1, 2, 3):
        for label, draw in (("Beta(4,1.5)", mixture(0, 4, 1.5)), ("80% solved, rest Beta(2,2)", mixture(0.8, 2, 2))):
            out.append(("few", f"{families}×5 {label}", draw, families * 5, 8, 1, "hat", max(curve_reps, 1), 5, 0.0,
                        curve_reps))
    return out


def _fmt(values: list[float]) -> str:
    return f"{np.mean(values):>6.3f} {np.max(values):>6.3f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--curve-reps", type=int, default=100, help="suites per setting whose whole curve is checked")
    parser.add_argument("--verbose", action="store_true", help="one line per setting")
    args = parser.parse_args()
    start = time.process_time()
    rows = []
    for i, (regime, label, draw, cases, trials, k, kind, r, family, missing, curves) in enumerate(
            grid(args.reps, args.curve_reps)):
        row = setting(regime, label, draw, cases, trials, k, kind, r, 1000 + i, family, missing, curves)
        rows.append(row)
        if args.verbose and regime != "few":
            print(f"{row['setting']:<52} floor/pct {row['floor']:.2f} " + " | ".join(
                f"{m} lo {row[m]['low_miss']:.3f} hi {row[m]['high_miss']:.3f} w {row[m]['width'] / row['width_pct']:.2f}"
                for m in METHODS), flush=True)
    tail_err = math.sqrt(0.025 * 0.975 / args.reps)
    print(f"{args.reps} replications per setting (Monte Carlo error of a tail share at 0.025: ±{tail_err:.3f}; of a "
          f"coverage at 0.95: ±{math.sqrt(0.95 * 0.05 / args.reps):.3f}), {time.process_time() - start:.0f} CPU-s\n")
    by: dict[str, list[dict[str, object]]] = defaultdict(list)
    for row in rows:
        by[str(row["regime"])].append(row)
    print(f"{'regime':<9} {'method':<10} {'n':>3} {'cover mean':>10} {'min':>6} {'<0.94':>5} {'low miss mean':>13} "
          f"{'max':>6} {'high miss mean':>14} {'max':>6} {'tails>0.025+2se':>15} {'w/pct mean':>10} {'max':>6} "
          f"{'w/bca mean':>10} {'max':>6}")
    for regime in ("ceiling", "families", "middle"):
        got = by[regime]
        for m in METHODS:
            cover = [r[m]["cover"] for r in got]  # type: ignore[index]
            lo, hi = [r[m]["low_miss"] for r in got], [r[m]["high_miss"] for r in got]  # type: ignore[index]
            over = sum(max(a, b) > 0.025 + 2 * tail_err for a, b in zip(lo, hi, strict=True))
            w_pct = [r[m]["width"] / r["width_pct"] for r in got if r["width_pct"] > 0]  # type: ignore[index,operator]
            w_bca = [r[m]["width"] / r["width_bca"] for r in got if r["width_bca"] > 0]  # type: ignore[index,operator]
            print(f"{regime:<9} {m:<10} {len(got):>3} {np.mean(cover):>10.3f} {np.min(cover):>6.3f} "
                  f"{sum(c < 0.94 for c in cover):>5} {_fmt(lo)[:6]:>13} {_fmt(lo)[7:]:>6} {_fmt(hi)[:6]:>14} "
                  f"{_fmt(hi)[7:]:>6} {over:>15} {_fmt(w_pct)[:6]:>10} {_fmt(w_pct)[7:]:>6} {_fmt(w_bca)[:6]:>10} "
                  f"{_fmt(w_bca)[7:]:>6}")
        floors = np.array([float(r["floor"]) for r in got])  # type: ignore[arg-type]
        ratio = np.array([r["gaffke"]["width"] / r["width_pct"] for r in got])  # type: ignore[index,operator]
        binding = float(np.mean((ratio / floors)[floors > 1.3])) if (floors > 1.3).any() else math.nan
        print(f"{regime:<9} floor/pct > 1.3 (no valid interval within 1.3× of the percentile bootstrap): "
              f"{int((floors > 1.3).sum())} of {len(got)} settings; gaffke/pct ≤ 1.3 in {int((ratio <= 1.3).sum())}; "
              f"gaffke width / floor: mean {np.mean(ratio / floors):.2f}, max {np.max(ratio / floors):.2f}, "
              f"where floor/pct > 1.3: mean {binding:.2f}\n")
    checked = [r for r in rows if "curves" in r]
    curves = np.vstack([r["curves"] for r in checked])  # type: ignore[misc]
    print(f"curves checked: {len(curves)} (k = 1..n, pass^k and pass@k) over {len(checked)} settings, including "
          "1–3 families and cases with missing trials")
    for col, what in enumerate(("raw: bounds not monotone in k", "raw: interval excludes its estimate",
                                "reported: bounds not monotone in k", "reported: interval excludes its estimate")):
        share = float(curves[:, col].mean())
        worst = max(float(r["curves"][:, col].mean()) for r in checked)  # type: ignore[index]
        print(f"  {what:<42} {share:.4f} of curves (worst setting {worst:.3f})")


if __name__ == "__main__":
    main()
