"""The P1 acceptance checks on the built-in suites, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main

SUITES = ["reimbursement", "refunds", "bugfix"]


def run(tmp_path: Path, suite: str, agent: str, trials: int, seed: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path / f"{suite}-{agent}-{trials}-{seed}"
    r = CliRunner().invoke(main, ["run", suite, "--agent", agent, "--trials", str(trials), "--seed", str(seed),
                                  "--out", str(out), "-q", "-j", "8"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    trials_ = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    assert len(trials_) == summary["suite"]["cases"] * trials
    return summary, trials_


@pytest.mark.parametrize("suite", SUITES)
def test_careful_passes_everything(tmp_path: Path, suite: str) -> None:
    summary, _ = run(tmp_path, suite, "careful", 4)
    assert summary["suite"]["pass_hat_k"]["1"]["estimate"] == 1.0
    assert summary["suite"]["pass_hat_k"]["4"]["estimate"] == 1.0
    assert summary["suite"]["cases"] >= (12 if suite == "reimbursement" else 10)


@pytest.mark.parametrize("suite", SUITES)
def test_noop_scores_zero(tmp_path: Path, suite: str) -> None:
    summary, trials = run(tmp_path, suite, "noop", 1)
    assert summary["suite"]["pass_hat_k"]["1"]["estimate"] == 0.0
    assert all(t["outcome"] == "fail" for t in trials)


def _failed(trial: dict[str, Any]) -> list[dict[str, Any]]:
    return [g for g in trial["grades"] if g["required"] and not g["passed"]]


def test_hasty_fails_for_the_right_reasons(tmp_path: Path) -> None:
    _, trials = run(tmp_path, "reimbursement", "hasty", 3)
    by_case: dict[str, list[dict[str, Any]]] = {}
    for t in trials:
        by_case.setdefault(t["case_id"], []).append(t)
    for t in by_case["timeout-after-write"]:
        assert t["outcome"] == "fail"
        counts = [g for g in _failed(t) if g["name"].startswith("row_count") and "tickets" in g["reason"]]
        assert counts and "expected 1, actual 2" in counts[0]["reason"]
    for t in by_case["colleague-invoice"]:
        assert t["outcome"] == "fail"
        denied = [g for g in _failed(t) if g["name"] == "no_denied_calls"]
        assert denied and "permission denied" in denied[0]["reason"] and "INV-207" in json.dumps(t["calls"])
    assert all(t["outcome"] == "pass" for t in by_case["inv-102"])


@pytest.mark.parametrize("suite", SUITES)
def test_flaky_pass_hat_k_falls_strictly_with_k(tmp_path: Path, suite: str) -> None:
    summary, _ = run(tmp_path, suite, "flaky", 8)
    curve = [summary["suite"]["pass_hat_k"][str(k)]["estimate"] for k in range(1, 9)]
    at = [summary["suite"]["pass_at_k"][str(k)]["estimate"] for k in range(1, 9)]
    assert 0 < curve[0] < 1
    assert all(a > b for a, b in zip(curve, curve[1:], strict=False)), curve
    assert all(a <= b for a, b in zip(at, at[1:], strict=False))
    for k in range(1, 9):
        e = summary["suite"]["pass_hat_k"][str(k)]
        assert e["ci_low"] <= e["estimate"] <= e["ci_high"]


@pytest.mark.parametrize("suite", SUITES)
def test_summary_equals_recomputation_from_trials(tmp_path: Path, suite: str, summary_matches: Any) -> None:
    run(tmp_path, suite, "flaky", 4, seed=3)
    summary_matches(tmp_path / f"{suite}-flaky-4-3")
