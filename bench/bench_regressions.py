"""False alarms and power of ``no_new_failures``, and the power of a change the size of compare's MDE (issue 12).

Run: ``python bench/bench_regressions.py`` (≈ 3 min; ``--reps 200`` for a quicker look). Populations
are agent-like; two runs of the same agent (no change) and runs where some cases break are compared
in memory, exactly as ``passhat gate`` and ``passhat compare`` do.

1. ``no_new_failures`` under no change: the share of run pairs the rule FAILs. "before" is the rule
   before issue 12 (any case that passed every baseline trial and failed one now); "now" is the rule as
   it is: the one-sided Fisher exact test per case, then (since issue 22) discrete Benjamini–Hochberg
   calibrated exactly under "no case dropped" (``stats.drop_test``). Nominal: α = 0.05.
2. Its power: 1 or 3 reliable cases break (p → 0, or p → 0.5).
3. compare's MDE: for two identical runs, the median reported MDE; then a change of exactly that size,
   spread over every case (each loses the same share of its pass rate) or concentrated (a share of
   cases breaks completely), and the share of comparisons whose p-value < 0.05. Nominal: 0.80.
   "before" is (z₀.₉₇₅ + z₀.₈)·SE with the paired t-test; "now" is what ``compare`` reports as it is: since
   issue 22 the uniform-drop MDE and ``p_value``, the within-case permutation test (``bench/sim_power.py``
   has the issue-22 study; the shares here are for issue 12's relative "spread" shape).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from passhat.compare.paired import compare_metric
from passhat.compare.runs import LoadedRun, match_cases
from passhat.gate.context import GateInput
from passhat.gate.model import NoNewFailures
from passhat.gate.rules_baseline import no_new_failures
from passhat.results.tally import CaseTally


def in_memory(passes: np.ndarray, trials: int, name: str) -> LoadedRun:
    tallies = {f"c{i:04d}": CaseTally(f"c{i:04d}", passes=int(c), fails=trials - int(c)) for i, c in enumerate(passes)}
    manifest = {"suite": {"name": "s", "hash": "h", "cases": dict.fromkeys(tallies, "x"),
                          "case_meta": {cid: {"tags": {}, "group": None} for cid in tallies}},
                "agent": name, "trials": trials, "seed": 0, "status": "complete"}
    return LoadedRun(Path(name), manifest, tallies)


def reliable_ish(rng: np.random.Generator, size: int) -> np.ndarray:
    """60 % of cases always pass, the rest p ~ Beta(8, 1)."""
    return np.where(rng.random(size) < 0.6, 1.0, rng.beta(8, 1, size))


def agent_like(rng: np.random.Generator, size: int) -> np.ndarray:
    """Half the cases always pass, 10 % never do, the rest p ~ Beta(2, 2)."""
    u = rng.random(size)
    return np.where(u < 0.5, 1.0, np.where(u < 0.6, 0.0, rng.beta(2, 2, size)))


def rule_outcomes(base: np.ndarray, cand: np.ndarray, trials: int) -> tuple[bool, bool]:
    """(before FAILs, now FAILs) for one pair of runs."""
    before = bool(np.any((base == trials) & (cand < trials)))
    b, c = in_memory(base, trials, "base"), in_memory(cand, trials, "cand")
    inp = GateInput(c, b, match_cases(b, c, allow_changed_cases=False), Path("."), 0.05)
    return before, no_new_failures(NoNewFailures(), inp, 0.05).outcome == "FAIL"


def new_failures_study(reps: int) -> None:
    print("1-2. no_new_failures: share of run pairs that FAIL (nominal α = 0.05 under no change)")
    print(f"{'population':<12} {'cases':>5} {'trials':>6} {'change':<26} {'before':>7} {'now':>7}")
    rng = np.random.default_rng(1)
    for name, draw in (("reliable-ish", reliable_ish), ("agent-like", agent_like)):
        for cases, trials in ((30, 4), (30, 8), (30, 16), (100, 8), (300, 8)):
            for change, broken, to in (("none", 0, 1.0), ("1 reliable case → p = 0", 1, 0.0),
                                       ("3 reliable cases → p = 0", 3, 0.0), ("3 reliable cases → p = 0.5", 3, 0.5)):
                hits = np.zeros(2)
                for _ in range(reps):
                    p = draw(rng, cases)
                    q = p.copy()
                    solid = np.flatnonzero(p == 1.0)[:broken]
                    q[solid] = to
                    hits += rule_outcomes(rng.binomial(trials, p), rng.binomial(trials, q), trials)
                before, now = hits / reps
                print(f"{name:<12} {cases:>5} {trials:>6} {change:<26} {before:>7.3f} {now:>7.3f}", flush=True)


def mde_study(reps: int) -> None:
    print("\n3. compare: power of a change the size of the reported MDE (pass^k, p < 0.05; nominal 0.80)")
    print(f"{'cases':>5} {'trials':>6} {'k':>2} {'MDE before':>10} {'spread':>7} {'concentr.':>9} "
          f"{'MDE now':>8} {'spread':>7} {'concentr.':>9}")
    rng = np.random.default_rng(2)
    big = agent_like(np.random.default_rng(0), 1_000_000)
    for cases in (15, 30, 60):
        for trials, k in ((1, 1), (4, 1), (8, 1), (16, 1), (8, 4)):
            def entry(p: np.ndarray, q: np.ndarray, trials: int = trials, k: int = k) -> dict:
                base = in_memory(rng.binomial(trials, p), trials, "b")
                cand = in_memory(rng.binomial(trials, q), trials, "c")
                got = compare_metric(base, cand, list(base.tallies), "pass_hat_k", k, seed=0, confidence=0.95)
                assert got is not None
                return got

            nulls = [entry(p, p) for p in (agent_like(rng, cases) for _ in range(reps))]
            c_old = 1.959963984540054 + 0.8416212335729143
            mde_old = float(np.median([c_old * e["se"] if e["se"] else np.nan for e in nulls if e["se"]]))
            mde_new = float(np.median([e["mde"] for e in nulls if e["mde"] is not None]))
            row = [cases, trials, k]
            for mde, old in ((mde_old, True), (mde_new, False)):
                powers = []
                for shape in ("spread", "concentrated"):
                    mean_k = float(np.mean(big**k))
                    if shape == "spread":  # each case loses the same share s of p: E[p^k](1 − (1 − s)^k) = MDE
                        share = 1 - (1 - min(mde / mean_k, 1.0)) ** (1 / k)
                        change = [(p, p * (1 - share)) for p in (agent_like(rng, cases) for _ in range(reps))]
                    else:  # a share of cases breaks: share · E[p^k] = MDE
                        share = min(mde / mean_k, 1.0)
                        change = [(p, np.where(rng.random(cases) < share, 0.0, p))
                                  for p in (agent_like(rng, cases) for _ in range(reps))]
                    hits = 0
                    for p, q in change:
                        e = entry(p, q)
                        if old:  # the test alone, as before: paired t (McNemar for 0/1 metrics)
                            hits += e["p_test"] is not None and e["p_test"] < 0.05
                        else:
                            hits += e["p_value"] < 0.05
                    powers.append(hits / reps)
                row += [mde, *powers]
            print(f"{row[0]:>5} {row[1]:>6} {row[2]:>2} {row[3]:>10.3f} {row[4]:>7.2f} {row[5]:>9.2f} "
                  f"{row[6]:>8.3f} {row[7]:>7.2f} {row[8]:>9.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=500)
    args = parser.parse_args()
    start = time.perf_counter()
    new_failures_study(args.reps)
    mde_study(max(100, args.reps // 2))
    print(f"\n{args.reps} replications per setting, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
