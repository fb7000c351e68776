"""Each rule kind decides PASS, FAIL or INCONCLUSIVE exactly as documented, on constructed runs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import beta
from scipy.stats import t as student_t

from passhat.errors import PasshatError
from passhat.gate import GateError, evaluate_gate
from passhat.stats import clopper_pearson, detectable_change, tango_interval


def rule(fake_run: Any, gate_file: Any, cases: dict[str, str], text: str, *, baseline: Path | None = None,
         **kw: Any) -> dict[str, Any]:
    run = fake_run("run", cases, **kw)
    result = evaluate_gate(run, gate_file(f"rules:\n  - {text}\n"), baseline).to_dict()
    only: dict[str, Any] = result["rules"][0]
    return only


PERM = {"tags": {"perm1": {"scenario": "permission"}, "perm2": {"scenario": "permission"}}}
NEVER = "never_fails: {select: {tags: {scenario: permission}}}"


def test_never_fails_passes_and_reports_the_clopper_pearson_bound(fake_run: Any, gate_file: Any) -> None:
    r = rule(fake_run, gate_file, {"perm1": "p" * 8, "perm2": "p" * 8, "other": "f" * 8}, NEVER, **PERM)
    assert r["outcome"] == "PASS" and r["selection"] == "scenario=permission"
    assert r["low"] == pytest.approx(0.05 ** (1 / 8))  # one-sided CP for 8/8
    assert r["details"]["cases"]["perm1"]["cp_low"] == pytest.approx(0.05 ** (1 / 8))


def test_never_fails_fails_on_one_failed_trial(fake_run: Any, gate_file: Any) -> None:
    r = rule(fake_run, gate_file, {"perm1": "p" * 8, "perm2": "ppppppfp"}, NEVER, **PERM)
    assert r["outcome"] == "FAIL" and "perm2 (7/8)" in r["reason"]


def test_never_fails_is_inconclusive_with_too_few_trials_for_the_required_bound(fake_run: Any, gate_file: Any) -> None:
    text = "never_fails: {select: {tags: {scenario: permission}}, min_lower_bound: 0.9}"
    r = rule(fake_run, gate_file, {"perm1": "p" * 8, "perm2": "p" * 8}, text, **PERM)
    assert r["outcome"] == "INCONCLUSIVE"
    assert f"needs ≥ {math.ceil(math.log(0.05) / math.log(0.9))} passing trials" in r["reason"]  # 29
    r = rule(fake_run, gate_file, {"perm1": "p" * 8, "perm2": "eeee"}, NEVER, **PERM)
    assert r["outcome"] == "INCONCLUSIVE" and "perm2" in r["reason"]


@pytest.mark.parametrize(("full", "outcome"), [(20, "PASS"), (14, "INCONCLUSIVE"), (2, "FAIL")])
def test_case_success_rate_on_all_or_nothing_cases_is_clopper_pearson(fake_run: Any, gate_file: Any, full: int,
                                                                       outcome: str) -> None:
    cases = {f"c{i:02d}": "pppp" if i < full else "ffff" for i in range(20)}
    r = rule(fake_run, gate_file, cases, "case_success_rate: {min: 0.7}")
    assert r["outcome"] == outcome and r["value"] == full / 20
    assert (r["low"], r["high"]) == pytest.approx(clopper_pearson(full, 20, 0.9), rel=1e-10)  # one-sided 95 %


def test_case_success_rate_is_the_mean_pass_rate_whatever_the_trials(fake_run: Any, gate_file: Any) -> None:
    # A case passing 3 of 4 counts 0.75, not 0: the share of cases expected to pass one attempt, which the
    # same agent shows at 4 trials and at 8 (before issue 22: the share passing every trial, 0.5 then less).
    four = {f"c{i:02d}": "pppp" if i < 10 else "ppfp" for i in range(20)}
    eight = {c: v * 2 for c, v in four.items()}
    at4 = rule(fake_run, gate_file, four, "case_success_rate: {min: 0.7}")
    at8 = rule(fake_run, gate_file, eight, "case_success_rate: {min: 0.7}")
    assert at4["value"] == at8["value"] == 0.875
    assert at4["details"]["fully_passing"] == at8["details"]["fully_passing"] == 10
    assert at4["outcome"] == at8["outcome"] == "PASS" and "mean per-case pass rate 0.875" in at4["reason"]


def test_case_success_rate_counts_a_group_once(fake_run: Any, gate_file: Any) -> None:
    cases = {f"c{i:02d}": "pppp" for i in range(20)}
    r = rule(fake_run, gate_file, cases, "case_success_rate: {min: 0.7}", groups={c: c[:2] for c in cases})
    # two units, all passing: the lower bound is that of 2 of 2, 0.05^(1/2) (up to Monte Carlo error)
    assert r["details"]["units"] == 2 and r["low"] == pytest.approx(0.05 ** 0.5, abs=0.01) and r["high"] == 1.0
    assert r["outcome"] == "INCONCLUSIVE"


def test_case_success_rate_weighs_a_large_family_as_one_unit(fake_run: Any, gate_file: Any) -> None:
    # 10 cases of one family fail together, 10 single cases pass: 11 units, not 20, and the family's one
    # draw moves half the weight, so the interval is wider than for 20 independent cases.
    cases = {f"f{i}": "ffff" for i in range(10)} | {f"s{i}": "pppp" for i in range(10)}
    family = rule(fake_run, gate_file, cases, "case_success_rate: {min: 0.25}", groups={f"f{i}": "family" for i in range(10)})
    alone = rule(fake_run, gate_file, cases, "case_success_rate: {min: 0.25}")
    assert family["details"]["units"] == 11 and alone["details"]["units"] == 20
    assert family["high"] - family["low"] > alone["high"] - alone["low"]
    assert family["outcome"] == "INCONCLUSIVE" and alone["outcome"] == "PASS"
    assert "11 unit(s)" in family["reason"]


@pytest.mark.parametrize(("cases", "text", "outcome"), [
    ({f"c{i}": "pppp" for i in range(10)}, "pass_hat_k: {k: 4, min: 0.25}", "PASS"),
    # 0 of 10 cases: a population at pass^4 = 0.25 shows that 0.75^10 = 5.6 % of the time, more than α, so
    # only 11 or more failing cases can FAIL the bar (Clopper–Pearson's bound, which Gaffke's is on 0/1 values).
    ({f"c{i}": "ffff" for i in range(10)}, "pass_hat_k: {k: 4, min: 0.25}", "INCONCLUSIVE"),
    ({f"c{i}": "ffff" for i in range(11)}, "pass_hat_k: {k: 4, min: 0.25}", "FAIL"),
    ({f"c{i}": "pppp" if i < 5 else "fppp" for i in range(10)}, "pass_hat_k: {k: 4, min: 0.5}", "INCONCLUSIVE"),
    ({f"c{i}": "pfff" for i in range(10)}, "pass_at_k: {k: 4, min: 0.5}", "PASS"),
])
def test_suite_pass_k_against_a_bar(fake_run: Any, gate_file: Any, cases: dict[str, str], text: str, outcome: str) -> None:
    r = rule(fake_run, gate_file, cases, text)
    assert r["outcome"] == outcome
    assert r["low"] <= r["value"] <= r["high"] and r["details"]["method"] == "gaffke"
    if r["value"] == 1:
        assert r["low"] == pytest.approx(0.05 ** (1 / 10))  # one-sided Clopper–Pearson for 10 of 10


def test_pass_hat_k_needs_k_trials(fake_run: Any, gate_file: Any) -> None:
    r = rule(fake_run, gate_file, {"a": "pppp", "b": "pppp"}, "pass_hat_k: {k: 8, min: 0.25}")
    assert r["outcome"] == "INCONCLUSIVE" and "needs n ≥ 8" in r["reason"] and "the run has 4 per case" in r["reason"]


def test_non_inferiority_uses_the_paired_interval(fake_run: Any, gate_file: Any) -> None:
    same = {f"c{i:02d}": "pppp" for i in range(40)}
    base = fake_run("base", same)
    r = rule(fake_run, gate_file, same, "non_inferior: {margin: 0.1}", baseline=base)
    # nothing differs: the pseudo-case interval alone, x = (d + 1)/2 ~ Beta(ν/2, ν/2) with
    # ν = ¼/V − 1, V = ⅛/(41·42) (the paired pseudo-case: a quarter on each cell of the 2×2 table)
    nu = 0.25 / (0.125 / (41 * 42)) - 1
    assert r["outcome"] == "PASS" and r["details"]["method"] == "pseudocase"
    assert r["low"] == pytest.approx(2 * beta.ppf(0.05, nu / 2, nu / 2) - 1, rel=1e-9)  # −0.028
    r = rule(fake_run, gate_file, same, "non_inferior: {margin: 0.02}", baseline=base)
    assert r["outcome"] == "INCONCLUSIVE" and r["bar"] == -0.02
    worse = {c: "ffff" if i < 20 else v for i, (c, v) in enumerate(same.items())}
    r = rule(fake_run, gate_file, worse, "non_inferior: {margin: 0.1}", baseline=base)
    assert r["outcome"] == "FAIL" and r["value"] == -0.5 and r["high"] < -0.1


def test_non_inferiority_bounds_are_the_one_sided_t_test(fake_run: Any, gate_file: Any) -> None:
    # 40 cases, 4 trials: 6 cases drop from 4/4 to 2/4 and 2 gain from 2/4 to 4/4.
    base = fake_run("base", {f"c{i:02d}": "pppp" if i >= 2 else "ppff" for i in range(40)})
    cand = {f"c{i:02d}": "ppff" if 2 <= i < 8 else "pppp" for i in range(40)}
    r = rule(fake_run, gate_file, cand, "non_inferior: {margin: 0.15}", baseline=base)
    d = np.array([0.5] * 2 + [-0.5] * 6 + [0.0] * 32)
    se = d.std(ddof=1) / math.sqrt(40)
    t95 = student_t.ppf(0.95, 39)
    assert r["low"] <= d.mean() - t95 * se and r["high"] >= d.mean() + t95 * se  # t ∪ pseudo-case
    assert r["outcome"] == "PASS" and r["details"]["method"] == "t_pseudocase" and r["details"]["test"] == "paired_t"
    assert r["details"]["mde"] == pytest.approx(detectable_change(d.std(ddof=1), 40, two_sided=False))
    # pass^4 with 4 trials in both runs is 0/1 per case: Tango's score interval, one-sided 95 %.
    r = rule(fake_run, gate_file, cand, "non_inferior: {k: 4, margin: 0.3}", baseline=base)
    low, high = tango_interval(6, 2, 40, 0.90)
    assert r["low"] <= low and r["high"] >= high and r["details"]["method"] == "tango_pseudocase"
    assert r["outcome"] == "PASS" and r["details"]["test"] == "mcnemar"


def test_baseline_rules_are_skipped_without_a_baseline(fake_run: Any, gate_file: Any) -> None:
    run = fake_run("run", {"a": "pp"})
    result = evaluate_gate(run, gate_file("rules:\n  - no_new_failures:\n  - non_inferior: {margin: 0.1}\n")).to_dict()
    assert [r["outcome"] for r in result["rules"]] == ["SKIPPED", "SKIPPED"]
    assert result["outcome"] == "INCONCLUSIVE"  # nothing was decided
    with pytest.raises(GateError, match="require_baseline"):
        evaluate_gate(run, gate_file("require_baseline: true\nrules:\n  - no_new_failures:\n", "strict.yaml")).to_dict()


def test_no_new_failures(fake_run: Any, gate_file: Any) -> None:
    base = fake_run("base", {"a": "pppp", "b": "pppp", "c": "pfpp"})
    r = rule(fake_run, gate_file, {"a": "pppp", "b": "ffff", "c": "ffff"}, "no_new_failures:", baseline=base)
    assert r["outcome"] == "FAIL" and r["value"] == 1  # 4/4 → 0/4: Fisher p = 1/70; c was not reliable before
    assert [row["id"] for row in r["details"]["new_failures"]] == ["b"]
    assert r["details"]["new_failures"][0]["p_value"] == pytest.approx(1 / 70)
    # one failed trial after 4/4 is what an unchanged agent does: named, but not a new failure (p = 0.5)
    r = rule(fake_run, gate_file, {"a": "pppp", "b": "pppf", "c": "ffff"}, "no_new_failures:", baseline=base)
    assert r["outcome"] == "PASS" and [row["id"] for row in r["details"]["failed_a_trial"]] == ["b"]
    assert "b (4/4 → 3/4, p = 0.5)" in r["reason"]
    r = rule(fake_run, gate_file, {"a": "pppp", "b": "pppp", "c": "ffff"}, "no_new_failures:", baseline=base)
    assert r["outcome"] == "PASS"
    r = rule(fake_run, gate_file, {"a": "pppp", "b": "eeee", "c": "pppp"}, "no_new_failures:", baseline=base)
    assert r["outcome"] == "INCONCLUSIVE" and "b" in r["reason"]


def test_a_baseline_of_another_suite_is_bad_input_unless_changed_cases_are_allowed(fake_run: Any, gate_file: Any) -> None:
    base = fake_run("base", {"a": "pppp", "b": "pppp"}, suite_hash="suite-v0")
    run = fake_run("run", {"a": "pppp", "b": "ffff"})
    gate = gate_file("rules:\n  - no_new_failures:\n")
    with pytest.raises(PasshatError, match="different suites"):
        evaluate_gate(run, gate, base).to_dict()
    result = evaluate_gate(run, gate, base, allow_changed_cases=True).to_dict()
    assert result["rules"][0]["outcome"] == "FAIL" and result["baseline"]["excluded"] == []


def test_an_unfinished_run_cannot_pass(fake_run: Any, gate_file: Any) -> None:
    r = rule(fake_run, gate_file, {"a": "pppp"}, "case_success_rate: {min: 0.1}", status="running")
    assert r["outcome"] == "INCONCLUSIVE" and "not complete" in r["reason"]
    r = rule(fake_run, gate_file, {"a": "pppf"}, "never_fails:", status="running")
    assert r["outcome"] == "FAIL"


def test_a_selection_that_matches_nothing_is_no_evidence(fake_run: Any, gate_file: Any) -> None:
    r = rule(fake_run, gate_file, {"a": "pp"}, "never_fails: {select: {tags: {scenario: permision}}}")
    assert r["outcome"] == "INCONCLUSIVE" and "scenario=permision" in r["reason"]
