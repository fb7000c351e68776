"""The P1 acceptance checks on the built-in suites, through the real CLI."""

from __future__ import annotations

import json
from typing import Any

import pytest

SUITES = ["reimbursement", "refunds", "bugfix"]


FLAKY_TRIALS = {"reimbursement": 8, "refunds": 8, "bugfix": 2}
"""Trials of flaky per suite: a bugfix trial runs the project's tests two or three times (seconds of CPU), and
its lapses are seeded per trial index, so 2 trials already show every property below (the same lapses as the
first 2 of 4); the cheap suites keep 8."""
CAREFUL_TRIALS = {"reimbursement": 4, "refunds": 4, "bugfix": 1}
"""Trials of careful per suite: a bugfix trial starts from the same tree whatever its seed (no seeded world
data), and careful is deterministic, so a second trial repeats the first call for call (that each trial gets a
fresh copy is tests/workspace's job, at a fraction of the cost); the seeded suites keep 4."""


def run(builtin_run: Any, suite: str, agent: str, trials: int, seed: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``passhat run SUITE --agent AGENT`` through the real CLI (shared per session: tests/conftest.py)."""
    out = builtin_run(suite, agent, trials, seed)
    summary = json.loads((out / "summary.json").read_text())
    trials_ = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    assert len(trials_) == summary["suite"]["cases"] * trials
    return summary, trials_


@pytest.mark.parametrize("suite", SUITES)
def test_careful_passes_everything(builtin_run: Any, suite: str) -> None:
    n = CAREFUL_TRIALS[suite]
    summary, _ = run(builtin_run, suite, "careful", n)
    assert summary["suite"]["pass_hat_k"]["1"]["estimate"] == 1.0
    assert summary["suite"]["pass_hat_k"][str(n)]["estimate"] == 1.0
    assert summary["suite"]["cases"] >= (12 if suite == "reimbursement" else 10)


@pytest.mark.parametrize("suite", SUITES)
def test_noop_scores_zero(builtin_run: Any, suite: str) -> None:
    summary, trials = run(builtin_run, suite, "noop", 1)
    assert summary["suite"]["pass_hat_k"]["1"]["estimate"] == 0.0
    assert all(t["outcome"] == "fail" for t in trials)


def _failed(trial: dict[str, Any]) -> list[dict[str, Any]]:
    return [g for g in trial["grades"] if g["required"] and not g["passed"]]


def test_hasty_fails_for_the_right_reasons(builtin_run: Any) -> None:
    _, trials = run(builtin_run, "reimbursement", "hasty", 3)
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
def test_flaky_pass_hat_k_falls_strictly_with_k(builtin_run: Any, suite: str) -> None:
    n = FLAKY_TRIALS[suite]
    summary, _ = run(builtin_run, suite, "flaky", n)
    curve = [summary["suite"]["pass_hat_k"][str(k)]["estimate"] for k in range(1, n + 1)]
    at = [summary["suite"]["pass_at_k"][str(k)]["estimate"] for k in range(1, n + 1)]
    assert 0 < curve[0] < 1
    assert all(a > b for a, b in zip(curve, curve[1:], strict=False)), curve
    assert all(a <= b for a, b in zip(at, at[1:], strict=False))
    for k in range(1, n + 1):
        e = summary["suite"]["pass_hat_k"][str(k)]
        assert e["ci_low"] <= e["estimate"] <= e["ci_high"]


@pytest.mark.parametrize("suite", SUITES)
def test_summary_equals_recomputation_from_trials(builtin_run: Any, suite: str, summary_matches: Any) -> None:
    """On flaky's run (passes and fails in one case): the summary is what the raw lines give."""
    run(builtin_run, suite, "flaky", FLAKY_TRIALS[suite])
    summary_matches(builtin_run(suite, "flaky", FLAKY_TRIALS[suite]))
