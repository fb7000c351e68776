"""A suite-mean bar that no run of the cases can PASS is said before the first trial and in its verdict, not left as
an INCONCLUSIVE that asks for trials which cannot help (gate.evaluate.reachable, design note 033)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import passhat
from passhat.gate import evaluate_gate
from passhat.runner import RunStore


def rules_of(run: Path) -> list[dict[str, Any]]:
    return json.loads((run / "gate.json").read_text())["rules"]


def test_an_unreachable_bar_is_said_before_the_first_trial_and_in_its_verdict(tmp_path: Path, gate_file: Any) -> None:
    gate = gate_file("rules:\n  - pass_hat_k: {k: 1, min: 0.95}\n  - pass_hat_k: {k: 1, min: 0.5}\n"
                     "  - case_success_rate: {min: 0.97}\n")
    out = tmp_path / "run"
    said: list[tuple[str, int]] = []

    def warned(message: str) -> None:  # how many trials were recorded when it was said
        said.append((message, sum(1 for _ in RunStore(out).iter_records())))

    passhat.evaluate("refunds", "careful", trials=2, out=out, gate=gate, on_warning=warned)
    assert [(m.split(":")[0], n) for m, n in said] == [("gate rule 0 (pass^1 ≥ 0.95)", 0),
                                                       ("gate rule 2 (case success rate ≥ 0.97)", 0)]
    assert "16 cases at 2 trials each" in said[0][0] and "only more cases raise it" in said[0][0]

    unreachable, reachable, rate = rules_of(out)
    assert unreachable["outcome"] == rate["outcome"] == "INCONCLUSIVE"
    # careful passed every trial, so the best bound a run of these cases can have is this run's own
    assert unreachable["details"]["pass_reachable"] is False
    assert unreachable["details"]["best_lower_bound"] == unreachable["low"]
    assert "no run of these 16 cases with 2 trials each can PASS this bar" in unreachable["reason"]
    assert "would decide it" not in unreachable["reason"]  # the straddle hint is taken back: trials cannot
    assert reachable["outcome"] == "PASS" and "pass_reachable" not in reachable["details"]
    assert rate["details"]["pass_reachable"] is False


def test_a_bar_within_reach_keeps_its_verdict_as_it_was(fake_run: Any, gate_file: Any) -> None:
    # 40 cases, 38 of them perfect: the all-pass bound (~0.93) clears 0.9, so INCONCLUSIVE here is the data's
    run = fake_run("run", {f"c{i:02d}": "pppp" if i >= 2 else "ppff" for i in range(40)})
    [rule] = evaluate_gate(run, gate_file("rules:\n  - pass_hat_k: {k: 1, min: 0.9}\n")).to_dict()["rules"]
    assert rule["outcome"] == "INCONCLUSIVE"
    assert "pass_reachable" not in rule["details"] and "would decide it" in rule["reason"]


def test_a_bar_out_of_reach_on_a_small_suite_even_where_the_run_fails(fake_run: Any, gate_file: Any) -> None:
    # 5 cases: even a perfect run's bound is below 0.6, so the rule can only ever FAIL or stay INCONCLUSIVE
    run = fake_run("run", {f"c{i}": "pppf" for i in range(5)})
    [rule] = evaluate_gate(run, gate_file("rules:\n  - pass_hat_k: {k: 1, min: 0.6}\n")).to_dict()["rules"]
    assert rule["outcome"] == "INCONCLUSIVE" and rule["details"]["pass_reachable"] is False
    assert rule["details"]["best_lower_bound"] < 0.6
    assert "only more cases raise it" in rule["reason"]


def test_rules_that_are_not_suite_means_are_not_judged_by_a_perfect_run(fake_run: Any, gate_file: Any) -> None:
    # never_fails on a failing case and pass^k with k above the trials: their own reasons say what they can do
    run = fake_run("run", {f"c{i}": "pp" for i in range(5)})
    results = evaluate_gate(run, gate_file("rules:\n  - never_fails: {}\n  - pass_hat_k: {k: 4, min: 0.1}\n")
                            ).to_dict()["rules"]
    assert all("pass_reachable" not in r["details"] for r in results)


def test_the_warning_reads_the_registered_rules_and_never_stops_a_run(tmp_path: Path, gate_file: Any) -> None:
    # said from the rules the manifest recorded: a gate file edited (or removed) since cannot make a resume fail
    from passhat.gate import unreachable_before_run
    from passhat.runner import RunStore as Store

    gate = gate_file("rules:\n  - pass_hat_k: {k: 1, min: 0.95}\n")
    out = tmp_path / "run"
    passhat.evaluate("refunds", "careful", trials=1, out=out, gate=gate, on_warning=lambda _m: None)
    gate.write_text("rules:\n  - pass_hat_k: {k: 1, min: 0.1}\n")
    [line] = unreachable_before_run(out, Store(out).manifest())
    assert line.startswith("gate rule 0 (pass^1 ≥ 0.95): cannot PASS")
    gate.unlink()
    assert unreachable_before_run(out, Store(out).manifest()) == [line]
