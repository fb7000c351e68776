"""``no_new_failures`` holds its false-alarm rate under no change and still catches real breakage (issue 12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import fisher_exact

from passhat.compare.runs import LoadedRun, match_cases
from passhat.gate import evaluate_gate
from passhat.gate.context import GateInput
from passhat.gate.model import NoNewFailures
from passhat.gate.rules_baseline import no_new_failures
from passhat.results.tally import CaseTally
from tests.models.builders import manifest_of


def in_memory(passes: np.ndarray, trials: int, name: str) -> LoadedRun:
    tallies = {f"c{i:03d}": CaseTally(f"c{i:03d}", passes=int(c), fails=trials - int(c)) for i, c in enumerate(passes)}
    return LoadedRun(Path(name), manifest_of(list(tallies), trials, agent=name), tallies)


def outcome(base: LoadedRun, cand: LoadedRun, alpha: float = 0.05) -> str:
    inp = GateInput(cand, base, match_cases(base, cand, allow_changed_cases=False), Path("."), alpha)
    return no_new_failures(NoNewFailures(), inp, alpha).outcome


@pytest.mark.parametrize(("cases", "trials"), [(30, 8), (100, 4), (30, 16)])
def test_an_unchanged_agent_trips_the_rule_at_most_alpha_of_the_time(cases: int, trials: int) -> None:
    # Agent-like suites: 60 % of cases always pass, the rest p ~ Beta(8, 1) — many pass 8/8 in one run
    # and fail a trial in the next. The rule FAILed 44–100 % of such reruns when one failed trial was "new".
    rng = np.random.default_rng(cases + trials)
    fails = 0
    reps = 300
    for _ in range(reps):
        p = np.where(rng.random(cases) < 0.6, 1.0, rng.beta(8, 1, cases))
        base, cand = in_memory(rng.binomial(trials, p), trials, "base"), in_memory(rng.binomial(trials, p), trials, "cand")
        fails += outcome(base, cand) == "FAIL"
    assert fails / reps <= 0.05, fails / reps


def test_real_breakage_is_still_a_new_failure() -> None:
    # 3 of 30 cases that passed 8/8 now pass at most 1 of 8: each is significant on its own.
    base = in_memory(np.array([8] * 30), 8, "base")
    cand = in_memory(np.array([0, 1, 0] + [8] * 20 + [7] * 7), 8, "cand")
    assert outcome(base, cand) == "FAIL"
    # one failed trial on one reliable case is not (p = 0.5) ...
    assert outcome(base, in_memory(np.array([8] * 29 + [7]), 8, "cand")) == "PASS"
    # ... but seven, each the one failure of its case's 16 trials and every one in the candidate, are: under
    # "no case dropped" each lands in either run with probability ½, so all seven in the candidate is 1/128.
    # (Before issue 22 each case's p = 0.5 was pruned as unable to reach α, and the rule PASSed.)
    assert outcome(base, in_memory(np.array([8] * 23 + [7] * 7), 8, "cand")) == "FAIL"
    # the same seven failures split between the runs are what an unchanged agent does
    both = in_memory(np.array([8] * 23 + [7] * 4 + [8] * 3), 8, "cand")
    assert outcome(in_memory(np.array([8] * 27 + [7] * 3), 8, "base"), both) == "PASS"


def test_fisher_drop_matches_scipy() -> None:
    from passhat.stats import fisher_drop

    for cb, nb, cc, nc in [(8, 8, 0, 8), (8, 8, 5, 8), (4, 4, 0, 4), (3, 3, 1, 5), (16, 16, 9, 16)]:
        p, p_min = fisher_drop(np.array([cb]), np.array([nb]), np.array([cc]), np.array([nc]))
        reference = fisher_exact([[cb, nb - cb], [cc, nc - cc]], alternative="greater").pvalue
        assert p[0] == pytest.approx(reference, rel=1e-9) and p_min[0] <= p[0]
    p, p_min = fisher_drop(np.array([7, 8]), np.array([8, 8]), np.array([0, 8]), np.array([8, 8]))
    assert list(p) == [1.0, 1.0] and list(p_min) == [1.0, 1.0]  # not fully passing before; unchanged


def test_drop_test_names_breaks_chance_could_not_make() -> None:
    from passhat.stats import drop_test

    rng = np.random.default_rng(0)
    # Five cases 4/4 → 0/4 (p = p_min = 1/70 each), two that failed one trial (p_min = 0.5), one unchanged.
    p = np.array([1 / 70] * 5 + [0.5, 0.5, 1.0])
    got = drop_test(p, p, 0.05, rng=rng)
    assert got.rejected.tolist() == [True] * 5 + [False] * 3 and got.testable == 5
    # under "no case dropped" five 1/70-events among five cases have probability 70^-5: the p-value is
    # the Monte Carlo floor 1/(R + 1)
    assert got.p_value == pytest.approx(1 / 4001)
    # One 4/4 → 0/4 next to twelve cases whose trials split 4-4 (each could have been 4/0 by chance):
    # P(some 1/70 event among 13) = 1 − (69/70)^13 = 0.17, so nothing is named.
    p_min = np.array([1 / 70] * 13)
    p = np.array([1 / 70] + [1.0] * 12)
    got = drop_test(p, p_min, 0.05, rng=rng)
    assert not got.rejected.any() and got.p_value == pytest.approx(1 - (69 / 70) ** 13, abs=0.02)
    # A rare extreme (8/8 → 0/8, 1/12,870) next to the same twelve is still named: they cannot reach it.
    p_min = np.array([1 / 12870] + [1 / 70] * 12)
    p = np.array([1 / 12870] + [1.0] * 12)
    assert drop_test(p, p_min, 0.05, rng=rng).rejected.tolist() == [True] + [False] * 12


def test_too_few_trials_to_show_anything_is_inconclusive(fake_run: Any, gate_file: Any) -> None:
    base = fake_run("base", {"a": "pp", "b": "pp"})
    run = fake_run("run", {"a": "ff", "b": "pp"})
    r = evaluate_gate(run, gate_file("rules:\n  - no_new_failures:\n"), base).to_dict()["rules"][0]
    assert r["outcome"] == "INCONCLUSIVE" and "3 graded trials" in r["reason"]  # 2/2 → 0/2: p = 1/6
