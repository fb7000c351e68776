"""What ``passhat compare`` reports means what it says (issue 12): its MDE has the power it claims, stratum
intervals stay inside [−1, 1], and the most common failure is the same in every process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from passhat.compare import comparison
from passhat.compare.paired import compare_metric
from passhat.compare.runs import LoadedRun, Matching
from passhat.models import PairedMetric
from passhat.results.tally import CaseTally
from tests.models.builders import manifest_of


def simulated_run(passes: np.ndarray, trials: int, name: str, tags: list[str] | None = None) -> LoadedRun:
    tallies = {f"c{i:03d}": CaseTally(f"c{i:03d}", passes=int(c), fails=trials - int(c)) for i, c in enumerate(passes)}
    meta = [{"scenario": t} for t in tags] if tags else []
    return LoadedRun(Path(name), manifest_of(list(tallies), trials, agent=name, tags=meta), tallies)


def population(rng: np.random.Generator, size: int) -> np.ndarray:
    """Half the cases always pass, 10 % never do, the rest p ~ Beta(2, 2)."""
    u = rng.random(size)
    return np.where(u < 0.5, 1.0, np.where(u < 0.6, 0.0, rng.beta(2, 2, size)))


@pytest.mark.parametrize("shape", ["spread", "concentrated"])
def test_a_change_of_the_reported_mde_is_detected_with_80_percent_power(shape: str) -> None:
    # The MDE reported for two identical runs (30 cases × 8 trials, pass^1) is the change the comparison
    # claims to detect 80 % of the time. Before issue 12 a change of that size was detected 35–75 % of
    # the time: 66 % when every case lost a little, 17 % when a few cases broke.
    rng = np.random.default_rng(5 if shape == "spread" else 6)
    cases, trials, reps = 30, 8, 200

    def compare(p_base: np.ndarray, p_cand: np.ndarray) -> PairedMetric:
        base, cand = simulated_run(rng.binomial(trials, p_base), trials, "b"), simulated_run(
            rng.binomial(trials, p_cand), trials, "c")
        entry = compare_metric(base, cand, list(base.tallies), "pass_hat_k", 1, seed=0, confidence=0.95)
        assert entry is not None
        return entry

    mde = float(np.median([compare(p, p).mde for p in (population(rng, cases) for _ in range(100))]))
    big = population(np.random.default_rng(0), 1_000_000)
    if shape == "spread":  # every case loses the same share of its pass rate
        share = mde / big.mean()
        detected = [compare(p, p * (1 - share)).p_value < 0.05 for p in (population(rng, cases) for _ in range(reps))]
    else:  # a few cases break completely
        broken = mde / big.mean()
        detected = [compare(p, np.where(rng.random(cases) < broken, 0.0, p)).p_value < 0.05
                    for p in (population(rng, cases) for _ in range(reps))]
    assert np.mean(detected) >= 0.75, (mde, np.mean(detected))


def test_stratum_intervals_stay_inside_minus_one_one() -> None:
    # A stratum of two cases: t with one degree of freedom multiplies the SE by 12.7.
    tags = ["big"] * 20 + ["pair"] * 2
    base = simulated_run(np.array([8] * 20 + [8, 8]), 8, "b", tags)
    cand = simulated_run(np.array([8] * 20 + [0, 6]), 8, "c", tags)
    result = comparison(base, cand, Matching(list(base.tallies), [], True), by=["scenario"])
    for value, block in result.strata["scenario"].items():
        for name, entry in block.metrics().items():
            assert -1.0 <= entry.ci_low <= entry.delta <= entry.ci_high <= 1.0, (value, name, entry)
    for name, entry in result.metrics.items():
        assert -1.0 <= entry.ci_low <= entry.ci_high <= 1.0, (name, entry)


def test_the_most_common_failure_is_the_same_in_every_process() -> None:
    # Two reasons tied at two failures each: the summary named whichever Python's hash seed put first.
    script = ("from passhat.results.summary import case_entry; from passhat.results.tally import CaseTally; "
              "from passhat.models import CaseMeta; "
              "t = CaseTally('c', passes=0, fails=4, failure_reasons=['state: b', 'reply: a', 'state: b', 'reply: a']); "
              "print(case_entry(t, CaseMeta()).top_failure)")
    seen = set()
    for seed in range(4):  # a choice left to the hash seed shows in 4 seeds with probability 7/8
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        seen.add(out.stdout.strip())
    assert seen == {"state: b"}  # the first seen of the tied reasons
