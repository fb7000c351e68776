"""Imported τ-bench suites, run for real: replaying each task's gold actions passes every case, and each
way of getting it wrong (a wrong argument, an extra write, a missing action, a missing output) fails,
as τ-bench's reward would (final database equal to the gold actions', every output in a reply)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat import evaluate
from passhat.cases import load_suite
from passhat.cli import main
from passhat.runner.records import TrialRecord

Calls = list[tuple[str, dict[str, Any]]]
Plan = Callable[[str, Calls, list[str]], tuple[Calls, str]]


@pytest.fixture
def suites(checkout: Path, tmp_path: Path) -> Path:
    out = tmp_path / "suites"
    r = CliRunner().invoke(main, ["cases", "import", "--format", "tau-bench", str(checkout), "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


def gold(folder: Path) -> dict[str, tuple[Calls, list[str]]]:
    """Each case's reference calls and the outputs its reply must contain, read back from the case files."""
    suite = load_suite(str(folder / "cases"))
    return {c.id: ([(r.tool, dict(r.args)) for r in c.reference],
                   [a.text for a in c.assertions if a.kind == "reply_contains"]) for c in suite.cases}


def replay(folder: Path, plan: Plan = lambda _id, calls, outputs: (calls, " ".join(outputs))) -> Any:
    """An agent that makes each case's gold calls and says its outputs, as changed by ``plan``."""
    tasks = gold(folder)

    async def agent(episode: Any) -> str:
        calls, reply = plan(episode.case_id, *tasks[episode.case_id])
        for tool, args in calls:
            await episode.call(tool, args)
        return f"All done. {reply}".strip()

    return agent


def run(folder: Path, agent: Any, tmp_path: Path, name: str, cases: tuple[str, ...] = ()) -> list[TrialRecord]:
    result = evaluate(folder / "cases", agent, trials=2, concurrency=2, out=tmp_path / name, cases=cases,
                      sanity=False)
    return list(result.records())


def test_the_imported_suites_lint_clean(suites: Path) -> None:
    for env in ("retail", "airline"):
        r = CliRunner().invoke(main, ["cases", "lint", str(suites / env / "cases"), "--json"])
        assert r.exit_code == 0, r.output
        report = json.loads(r.output)
        assert report["cases"] == {"retail": 3, "airline": 1}[env]
        assert [f for f in report["findings"] if f["severity"] == "error"] == []


def test_replaying_the_gold_actions_passes_every_case(suites: Path, tmp_path: Path) -> None:
    for env, n in (("retail", 3), ("airline", 1)):
        records = run(suites / env, replay(suites / env), tmp_path, env)
        assert len(records) == 2 * n
        assert {(r.case_id, r.outcome) for r in records} == {(c, "pass") for c in gold(suites / env)}, \
            [(r.case_id, [g.reason for g in r.grades if not g.passed]) for r in records if r.outcome != "pass"]
    cancelled = run(suites / "retail", replay(suites / "retail"), tmp_path, "again", ("retail-test-000",))[0]
    after = {ch["after"]["key"]: ch["after"] for changes in cancelled.diff.values() for ch in changes}
    assert json.loads(after["#W0000001"]["_more"]) == {"cancel_reason": "no longer needed"}  # a field τ-bench added
    assert json.loads(after["noah_brown_1234"]["payment_methods"])["gift_card_1111"]["balance"] == 74.54


def wrong_reason(case: str, calls: Calls, outputs: list[str]) -> tuple[Calls, str]:
    return [(t, {**a, "reason": "ordered by mistake"} if t == "cancel_pending_order" else a) for t, a in calls], ""


def extra_write(case: str, calls: Calls, outputs: list[str]) -> tuple[Calls, str]:
    return [*calls, ("cancel_pending_order", {"order_id": "#W0000003", "reason": "no longer needed"})], ""


def missing_write(case: str, calls: Calls, outputs: list[str]) -> tuple[Calls, str]:
    return [(t, a) for t, a in calls if t != "cancel_pending_order"], ""


def missing_output(case: str, calls: Calls, outputs: list[str]) -> tuple[Calls, str]:
    return calls, "You paid 128 dollars."


def wrong_bags(case: str, calls: Calls, outputs: list[str]) -> tuple[Calls, str]:
    return [(t, {**a, "nonfree_baggages": 2} if t == "update_reservation_baggages" else a) for t, a in calls], ""


@pytest.mark.parametrize(("env", "case", "plan", "reason"), [
    ("retail", "retail-test-000", wrong_reason, "difference(s) from the reference's final state"),
    ("retail", "retail-test-000", extra_write, "orders ['#W0000003']: unexpected updated"),
    ("retail", "retail-test-000", missing_write, "expected updated"),
    ("retail", "retail-test-001", missing_output, "128.5"),
    ("airline", "airline-test-000", wrong_bags, "nonfree_baggages expected 1, actual 2"),
], ids=["wrong-argument", "extra-write", "missing-action", "missing-output", "airline-wrong-argument"])
def test_each_way_of_getting_it_wrong_fails(suites: Path, tmp_path: Path, env: str, case: str, plan: Plan,
                                            reason: str) -> None:
    records = run(suites / env, replay(suites / env, plan), tmp_path, plan.__name__, (case,))
    assert [r.outcome for r in records] == ["fail", "fail"]
    failed = " | ".join(g.reason for g in records[0].grades if not g.passed)
    assert reason in failed


def test_a_hand_off_ends_the_conversation_and_later_writes_are_refused(suites: Path, tmp_path: Path) -> None:
    def write_after_hand_off(case: str, calls: Calls, outputs: list[str]) -> tuple[Calls, str]:
        return [*calls, ("cancel_pending_order", {"order_id": "#W0000004", "reason": "no longer needed"})], ""

    records = run(suites / "retail", replay(suites / "retail", write_after_hand_off), tmp_path, "handoff",
                  ("retail-test-002",))
    rec = records[0]
    assert [(c.tool, c.status) for c in rec.calls] == [
        ("get_order_details", "ok"), ("transfer_to_human_agents", "ok"), ("cancel_pending_order", "after_end")]
    assert rec.end_reason == "ended_by_tool" and rec.outcome == "pass"  # the refused write changed nothing
