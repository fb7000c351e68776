"""A gate's error is the gate's (issue 22 item 2): false FAILs with several rules at their bars, and
``case_success_rate`` deciding on a quantity that does not move with the number of trials.

Run: ``python bench/sim_gate_error.py`` (≈ 3 CPU-minutes; ``--reps 200`` for a look). Runs are built in
memory and gated exactly as ``passhat gate`` does (``gate.evaluate.evaluate_rules``: every rule, then
Holm's step-down over the FAIL-capable ones). Every share is printed with its Monte Carlo standard error.

1. Three statistical rules, each with its truth exactly at its bar: the share of gates that FAIL (nominal
   ≤ α = 0.05), with Holm (what passhat does) and without it (each rule FAILing at α on its own, as
   before issue 22), and each rule's own FAIL rate. Two gates:
   - ``one run``: ``case_success_rate`` (min = E[p]), ``pass_hat_k`` k = 2 (min = E[p²]) and
     ``pass_at_k`` k = 2 (min = E[1 − (1 − p)²]) on the same run;
   - ``vs baseline``: the candidate is exactly ``margin`` worse than the baseline on pass^1 (every case's
     p shrinks by the same factor), with ``case_success_rate`` and ``pass_hat_k`` k = 2 at the
     candidate's values and ``non_inferior`` at its margin.
2. ``case_success_rate`` as the number of trials grows, for a strong agent (80 % of cases always pass,
   the rest p ~ Beta(9, 1); 40 cases; bar 0.85): the share of runs that PASS, before (the share of cases
   passing every trial, Wilson over cases) and now (the mean per-case pass rate, Gaffke's bound). Before,
   the quantity itself was E[p^n], which falls with n; now it is E[p] whatever n, and trials only narrow
   the interval. Then the false PASS rate now with the truth exactly at the bar (nominal ≤ 0.05).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from passhat.compare.runs import LoadedRun, match_cases
from passhat.gate.context import GateInput
from passhat.gate.evaluate import evaluate_rules
from passhat.gate.schema import GateFile
from passhat.results.tally import CaseTally
from passhat.stats import wilson_score

Draw = Callable[[np.random.Generator, int], np.ndarray]
BIG = 2_000_000


def strong(rng: np.random.Generator, size: int) -> np.ndarray:
    """80 % of cases always pass, the rest p ~ Beta(9, 1)."""
    return np.where(rng.random(size) < 0.8, 1.0, rng.beta(9, 1, size))


def realistic(rng: np.random.Generator, size: int) -> np.ndarray:
    """Half the cases always pass, 10 % never do, the rest p ~ Beta(2, 2)."""
    u = rng.random(size)
    return np.where(u < 0.5, 1.0, np.where(u < 0.6, 0.0, rng.beta(2, 2, size)))


def middle(rng: np.random.Generator, size: int) -> np.ndarray:
    """p ~ Beta(4, 1.5) for every case."""
    return rng.beta(4, 1.5, size)


POPULATIONS: dict[str, Draw] = {"strong": strong, "realistic": realistic, "middle": middle}


def in_memory(passes: np.ndarray, trials: int, name: str, seed: int) -> LoadedRun:
    tallies = {f"c{i:04d}": CaseTally(f"c{i:04d}", passes=int(c), fails=trials - int(c)) for i, c in enumerate(passes)}
    manifest = {"suite": {"name": "s", "hash": "h", "cases": dict.fromkeys(tallies, "x"),
                          "case_meta": {cid: {"tags": {}, "group": None} for cid in tallies}},
                "agent": name, "trials": trials, "seed": seed, "status": "complete"}
    return LoadedRun(Path(name), manifest, tallies)


def se(share: float, reps: int) -> float:
    return math.sqrt(max(share * (1 - share), 1e-12) / reps)


def gate_study(reps: int, alpha: float) -> None:
    print(f"1. Three rules at their bars: share of gates that FAIL (nominal ≤ α = {alpha:g}; ± one Monte Carlo SE)")
    print(f"{'gate':<12} {'population':<10} {'cases':>5} {'trials':>6} {'Holm (now)':>14} {'each at α':>14} "
          f"{'rule FAIL rates alone':>30}")
    rng = np.random.default_rng(11)
    margin = 0.1
    for which in ("one run", "vs baseline"):
        for name, draw in POPULATIONS.items():
            p_big = draw(np.random.default_rng(99), BIG)
            shrink = 1 - margin / float(np.mean(p_big))  # the candidate: every p shrinks, E[p] drops by margin
            q_big = p_big * shrink if which == "vs baseline" else p_big
            bars = {"case_success_rate": float(np.mean(q_big)), "pass_hat_k": float(np.mean(q_big**2)),
                    "pass_at_k": float(np.mean(1 - (1 - q_big) ** 2))}
            rules = [{"case_success_rate": {"min": bars["case_success_rate"]}},
                     {"pass_hat_k": {"k": 2, "min": bars["pass_hat_k"]}}]
            rules.append({"pass_at_k": {"k": 2, "min": bars["pass_at_k"]}} if which == "one run"
                         else {"non_inferior": {"margin": margin}})
            gates = {a: GateFile.model_validate({"alpha": a, "rules": rules}) for a in (alpha,)}
            for cases, trials in ((20, 4), (60, 8)):
                fails = np.zeros((reps, 2))
                alone = np.zeros((reps, 3))
                for r in range(reps):
                    p = draw(rng, cases)
                    q = p * shrink if which == "vs baseline" else p
                    cand = in_memory(rng.binomial(trials, q), trials, "cand", r)
                    base = in_memory(rng.binomial(trials, p), trials, "base", r) if which == "vs baseline" else None
                    matching = match_cases(base, cand, allow_changed_cases=False) if base is not None else None
                    inp = GateInput(cand, base, matching, Path("."), alpha)
                    results = evaluate_rules(gates[alpha], inp, "sim.yaml")
                    # Without Holm a rule FAILs alone at α: its verdict before the step-down.
                    raw = [res.outcome == "FAIL" or (res.details.get("holm", {}).get("kept") is False)
                           for res in results]
                    fails[r] = [any(res.outcome == "FAIL" for res in results), any(raw)]
                    alone[r] = raw
                holm, each = fails.mean(axis=0)
                rates = " ".join(f"{x:.3f}" for x in alone.mean(axis=0))
                print(f"{which:<12} {name:<10} {cases:>5} {trials:>6} {holm:>7.3f} ±{se(holm, reps):.3f} "
                      f"{each:>7.3f} ±{se(each, reps):.3f} {rates:>30}", flush=True)


def case_success_study(reps: int, alpha: float) -> None:
    print("\n2. case_success_rate as trials grow: strong agent, 40 cases, bar 0.85 (share of runs that PASS; "
          "± one Monte Carlo SE)")
    print(f"{'trials':>6} {'E[p^n] (before)':>15} {'PASS before':>14} {'E[p] (now)':>10} {'PASS now':>14}")
    rng = np.random.default_rng(12)
    p_big = strong(np.random.default_rng(99), BIG)
    gate = GateFile.model_validate({"alpha": alpha, "rules": [{"case_success_rate": {"min": 0.85}}]})
    for trials in (1, 2, 4, 8, 16):
        before = now = 0
        for r in range(reps):
            c = rng.binomial(trials, strong(rng, 40))
            low, _ = wilson_score(float(np.mean(c == trials)), 40, 1 - 2 * alpha)
            before += low >= 0.85
            inp = GateInput(in_memory(c, trials, "run", r), None, None, Path("."), alpha)
            now += evaluate_rules(gate, inp, "sim.yaml")[0].outcome == "PASS"
        b, n = before / reps, now / reps
        print(f"{trials:>6} {float(np.mean(p_big**trials)):>15.3f} {b:>7.3f} ±{se(b, reps):.3f} "
              f"{float(np.mean(p_big)):>10.3f} {n:>7.3f} ±{se(n, reps):.3f}", flush=True)
    print(f"\n   now, truth exactly at the bar: false PASS (nominal ≤ {alpha:g})")
    print(f"{'population':<10} {'cases':>5} {'trials':>6} {'bar = E[p]':>10} {'false PASS':>14}")
    for name, draw in POPULATIONS.items():
        bar = float(np.mean(draw(np.random.default_rng(99), BIG)))
        gate = GateFile.model_validate({"alpha": alpha, "rules": [{"case_success_rate": {"min": bar}}]})
        for cases, trials in ((20, 1), (20, 8), (60, 4), (60, 16)):
            hits = 0
            for r in range(reps):
                c = rng.binomial(trials, draw(rng, cases))
                inp = GateInput(in_memory(c, trials, "run", r), None, None, Path("."), alpha)
                hits += evaluate_rules(gate, inp, "sim.yaml")[0].outcome == "PASS"
            share = hits / reps
            print(f"{name:<10} {cases:>5} {trials:>6} {bar:>10.3f} {share:>7.3f} ±{se(share, reps):.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=600)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args()
    start = time.process_time()
    gate_study(args.reps, args.alpha)
    case_success_study(args.reps, args.alpha)
    print(f"\n{args.reps} replications per row, {time.process_time() - start:.0f} CPU-s")


if __name__ == "__main__":
    main()
