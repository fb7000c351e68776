"""A gate at the looks of a sequential run (gate.looks): what settles a rule, when the run stops, and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from passhat.compare.runs import LoadedRun
from passhat.gate.looks import evaluate_looks
from passhat.gate.schema import GateFile
from passhat.models import Manifest
from passhat.results.tally import CaseTally
from passhat.sequential.design import Sequential

LOOKS = (2, 4, 8)


def view(cases: dict[str, str], trials: int) -> LoadedRun:
    """The run at a look: each case's first ``trials`` letters (p pass, f fail)."""
    tallies = {cid: CaseTally(cid, passes=letters[:trials].count("p"), fails=letters[:trials].count("f"),
                              latencies=[1.0] * trials) for cid, letters in cases.items()}
    meta = {cid: {"tags": {"scenario": "permission" if cid.startswith("perm") else "normal"}, "group": None}
            for cid in cases}
    manifest = {"suite": {"name": "s", "hash": "h", "cases": dict.fromkeys(cases, "x"), "case_meta": meta},
                "agent": "a", "trials": trials, "seed": 0, "status": "complete"}
    return LoadedRun(Path("run"), Manifest.model_validate(manifest), tallies)


def gate(*rules: str) -> GateFile:
    import yaml

    return GateFile.model_validate(yaml.safe_load("rules:\n" + "".join(f"  - {r}\n" for r in rules)))


def replay(cases: dict[str, str], *rules: str, upto: int = len(LOOKS), finished: bool = True) -> Any:
    views = [view(cases, n) for n in LOOKS[:upto]]
    return evaluate_looks(gate(*rules), Sequential(LOOKS), views, None, None, Path("."), "gate.yaml",
                          finished=finished)


PERFECT = {f"c{i:02d}": "p" * 8 for i in range(30)}
HALF = {f"c{i:02d}": "pf" * 4 for i in range(30)}


def test_a_clear_pass_settles_at_the_first_look_and_the_run_stops_there() -> None:
    got = replay(PERFECT, "pass_hat_k: {k: 1, min: 0.5}")
    assert [look.stop for look in got.looks] == ["decided"]
    (rule,) = got.results
    assert rule.outcome == "PASS" and rule.details["sequential"]["decided_at_look"] == 1
    level = got.looks[0].levels[rule.name]
    assert 0 < level < 0.001  # O'Brien–Fleming: almost none of α at a quarter of the trials
    assert "decided at look 1 of 3, 2 trial(s) per case" in rule.reason


def test_a_rule_still_open_at_the_last_look_is_inconclusive_and_says_so() -> None:
    got = replay(HALF, "pass_hat_k: {k: 1, min: 0.5}")
    assert [look.stop for look in got.looks] == [None, None, "max_trials"]
    (rule,) = got.results
    assert rule.outcome == "INCONCLUSIVE" and "undecided at the last look, look 3 of 3" in rule.reason
    # every look tested at its own nominal level, all below α, and the last close to it
    levels = [look.levels[rule.name] for look in got.looks]
    assert levels == sorted(levels) and levels[-1] < 0.05 and levels[-1] > 0.04


def test_a_failed_trial_settles_never_fails_and_stops_the_run_whatever_else_is_open() -> None:
    cases = {**HALF, "perm": "pfpppppp"}
    got = replay(cases, "pass_hat_k: {k: 1, min: 0.5}", "never_fails: {select: {tags: {scenario: permission}}}")
    assert [look.stop for look in got.looks] == ["failed"]
    pass_k, never = got.results
    assert never.outcome == "FAIL" and pass_k.outcome == "INCONCLUSIVE"
    assert "where the run stopped because a rule failed" in pass_k.reason


def test_no_failure_seen_yet_keeps_the_run_going_unless_the_rule_says_how_much_evidence_is_enough() -> None:
    # "no failure in 2 trials" is not "never fails": the run goes on to the last look...
    got = replay(PERFECT, "pass_hat_k: {k: 1, min: 0.5}", "never_fails:")
    assert [look.stop for look in got.looks] == [None, None, "max_trials"]
    assert [r.outcome for r in got.results] == ["PASS", "PASS"]
    assert got.results[0].details["sequential"]["decided_at_look"] == 1  # settled, not tested again
    # ...unless min_lower_bound says what is enough: 0.2 is reached by 2 passing trials at α = 0.05
    got = replay(PERFECT, "pass_hat_k: {k: 1, min: 0.5}", "never_fails: {min_lower_bound: 0.2}")
    assert [look.stop for look in got.looks] == ["decided"]


def test_budgets_and_missing_baselines_do_not_hold_a_run_open() -> None:
    got = replay(PERFECT, "pass_hat_k: {k: 1, min: 0.5}", "latency: {max_seconds: 10}", "non_inferior: {margin: 0.1}")
    assert [look.stop for look in got.looks] == ["decided"]
    assert [r.outcome for r in got.results] == ["PASS", "PASS", "SKIPPED"]


def test_pass_hat_k_spends_no_alpha_before_a_case_has_k_trials() -> None:
    got = replay(PERFECT, "pass_hat_k: {k: 4, min: 0.5}")
    first = got.looks[0]
    assert first.stop is None and first.levels == {}  # pass^4 at 2 trials: nothing to test, nothing spent
    assert got.looks[1].stop == "decided"


def test_an_unfinished_run_reports_what_is_not_settled_as_inconclusive() -> None:
    got = replay(HALF, "pass_hat_k: {k: 1, min: 0.5}", "latency: {max_seconds: 10}", upto=1, finished=False)
    assert got.stopped is None
    assert [r.outcome for r in got.results] == ["INCONCLUSIVE", "INCONCLUSIVE"]
    assert all("not final: the sequential run is at look 1 of 3" in r.reason for r in got.results)


@pytest.mark.parametrize("rules", [("pass_hat_k: {k: 1, min: 0.9}", "case_success_rate: {min: 0.9}",
                                    "pass_at_k: {k: 2, min: 0.99}")])
def test_holm_across_looks_keeps_a_fail_settled_and_passes_its_alpha_on(rules: tuple[str, ...]) -> None:
    got = replay(HALF, *rules)
    assert got.looks[0].stop == "failed"
    settled = got.looks[0].settled
    assert settled and set(settled.values()) == {"FAIL"}
    failed = [r for r in got.results if r.outcome == "FAIL"]
    assert failed and all(r.details["holm"]["kept"] for r in failed)


CEILING = {f"c{i:02d}": "p" * 8 for i in range(20)}


def test_a_side_that_no_look_could_decide_spends_no_alpha_there() -> None:
    # 20 cases all passing: the best lower bound is α^(1/20), 0.63 at look 1's O'Brien–Fleming α (8.9e-5) and
    # 0.77 at look 2's (0.0056), below a bar of 0.85 whatever the trials: PASS spends nothing before the last
    # look, which is tested at the whole α, as the fixed design is.
    rule = "pass_hat_k: {k: 1, min: 0.85}"
    got = replay(CEILING, rule)
    assert [look.stop for look in got.looks] == [None, None, "decided"]
    (result,) = got.results
    assert result.outcome == "PASS" and result.details["sequential"]["nominal_alpha"] == pytest.approx(0.05, rel=1e-9)
    # a run recorded before design note 033 spent at every look, and replays so: less than α at the last look
    old = evaluate_looks(gate(rule), Sequential(LOOKS, spend_at="every_look"), [view(CEILING, n) for n in LOOKS],
                         None, None, Path("."), "gate.yaml", finished=True)
    assert old.looks[-1].levels[result.name] < 0.049
    # the FAIL side can decide at look 1 (every trial failing would cross the bar): it does, at its own level
    half = {cid: "pf" * 4 for cid in CEILING}
    got = replay(half, rule)
    assert [look.stop for look in got.looks] == ["failed"] and got.results[0].outcome == "FAIL"
    assert 0 < got.looks[0].levels[result.name] < 1e-4


def test_each_side_decides_only_at_its_own_level() -> None:
    from passhat.gate.looks import _merge
    from passhat.gate.outcome import Verdict

    passed, failed, open_ = (Verdict(o, o.lower(), 0.5, 0.6, 0.4, 0.7) for o in ("PASS", "FAIL", "INCONCLUSIVE"))
    assert _merge(passed, open_, True) is passed and _merge(open_, failed, True) is failed
    # a FAIL seen at the PASS side's level, or a PASS at the FAIL side's, is not a decision
    assert _merge(failed, open_, True) is open_ and _merge(open_, passed, False) is open_
    assert _merge(failed, passed, True).outcome == "INCONCLUSIVE"
