"""Budget rules (latency, cost per success) and the judge-agreement rule on constructed runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from passhat.gate import GateError, evaluate_gate


def rule(fake_run: Any, gate_file: Any, cases: dict[str, str], text: str, **kw: Any) -> dict[str, Any]:
    result = evaluate_gate(fake_run("run", cases, **kw), gate_file(f"rules:\n  - {text}\n")).to_dict()
    only: dict[str, Any] = result["rules"][0]
    return only


def test_latency_percentile_is_an_observed_budget(fake_run: Any, gate_file: Any) -> None:
    latency = {"a": [float(x) for x in range(1, 11)], "b": [float(x) for x in range(11, 21)]}
    cases = {"a": "p" * 10, "b": "f" * 10}
    expected = float(np.percentile(range(1, 21), 95))  # 19.05, linear interpolation
    r = rule(fake_run, gate_file, cases, "latency: {percentile: 95, max_seconds: 20}", latency=latency)
    assert r["outcome"] == "PASS" and r["value"] == pytest.approx(expected)
    r = rule(fake_run, gate_file, cases, "latency: {percentile: 95, max_seconds: 19}", latency=latency)
    assert r["outcome"] == "FAIL"
    r = rule(fake_run, gate_file, cases, "latency: {max_seconds: 1, measure: time_to_first_token}")
    assert r["outcome"] == "INCONCLUSIVE"


@pytest.mark.parametrize(("cases", "cost", "budget", "outcome", "value"), [
    ({f"c{i}": "pppf" for i in range(10)}, 0.01, 0.05, "PASS", 0.4 / 30),
    ({f"c{i}": "pppf" for i in range(10)}, 0.01, 0.01, "FAIL", 0.4 / 30),
    ({"c": "ffff"}, 0.01, 0.05, "FAIL", None),
    ({"c": "ffff"}, 0.0, 0.05, "INCONCLUSIVE", None),
])
def test_cost_per_success(fake_run: Any, gate_file: Any, cases: dict[str, str], cost: float, budget: float,
                          outcome: str, value: float | None) -> None:
    r = rule(fake_run, gate_file, cases, f"cost_per_success: {{max: {budget}}}", cost=cost)
    assert r["outcome"] == outcome and r["value"] == pytest.approx(value)


@pytest.mark.parametrize(("text", "outcome"), [
    ("judge_agreement: {file: cal.json, min: 0.6}", "PASS"),  # gwet_ac1 by default
    ("judge_agreement: {file: cal.json, min: 0.7}", "FAIL"),
    ("judge_agreement: {file: cal.json, statistic: percent_agreement, min: 0.7}", "PASS"),
    ("judge_agreement: {file: cal.json, statistic: percent_agreement, min: 0.75}", "INCONCLUSIVE"),
    ("judge_agreement: {file: cal.json, statistic: percent_agreement, min: 0.9}", "FAIL"),
    ("judge_agreement: {file: cal.json, statistic: test_retest, min: 0.5}", "FAIL"),  # undefined fails closed
    ("judge_agreement: {file: cal.json, statistic: nested.kappa, min: 0.6}", "PASS"),
])
def test_judge_agreement_reads_the_calibration_file(fake_run: Any, gate_file: Any, tmp_path: Path, text: str,
                                                    outcome: str) -> None:
    (tmp_path / "cal.json").write_text(json.dumps({  # the shape `passhat calibrate --out` writes
        "format": "passhat.calibration/1", "items": 120, "gwet_ac1": 0.65, "cohen_kappa": 0.41,
        "percent_agreement": {"estimate": 0.8, "ci_low": 0.72, "ci_high": 0.88, "successes": 96, "n": 120},
        "test_retest": {"estimate": None, "items": 0}, "nested": {"kappa": 0.7}}))
    assert rule(fake_run, gate_file, {"a": "p"}, text)["outcome"] == outcome


def test_unusable_calibration_input_is_bad_input_naming_the_field(fake_run: Any, gate_file: Any, tmp_path: Path) -> None:
    run = fake_run("run", {"a": "p"})
    with pytest.raises(GateError) as info:
        evaluate_gate(run, gate_file("rules:\n  - judge_agreement: {file: missing.json, min: 0.6}\n")).to_dict()
    assert info.value.field == "rules.0.judge_agreement.file" and "missing.json" in str(info.value)
    (tmp_path / "cal.json").write_text('{"format": "passhat.calibration/1", "kappa": 0.7}')
    with pytest.raises(GateError) as info:
        evaluate_gate(run, gate_file("rules:\n  - judge_agreement: {file: cal.json, min: 0.6}\n")).to_dict()
    assert info.value.field == "rules.0.judge_agreement.statistic" and "found: format, kappa" in str(info.value)
    (tmp_path / "cal.json").write_text('{"format": "passhat.summary/1", "gwet_ac1": 0.7}')
    with pytest.raises(GateError, match="not a `passhat calibrate` report"):
        evaluate_gate(run, gate_file("rules:\n  - judge_agreement: {file: cal.json, min: 0.6}\n")).to_dict()
