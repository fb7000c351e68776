"""Every failed trial gets a category and the earliest failing step, checked against known causes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from passhat.agents import load_agent
from passhat.cases import load_suite
from passhat.runner import RunConfig, RunStore, execute

KNOWN = {
    "reimbursement": {
        "timeout-after-write": ("duplicate_write", "create_reimbursement_ticket"),
        "invoice-timeout": ("unrecovered_tool_error", None),
        "malformed-amount": ("unrecovered_tool_error", None),
        "colleague-invoice": ("permission_violation", None),
        "approve-own-ticket": ("permission_violation", "approve_ticket"),
        "policy-search-error": ("unrecovered_tool_error", None),
    },
    "refunds": {
        "refund-4812-drop-response": ("duplicate_write", "issue_refund"),
        "email-drop-4870": ("duplicate_write", "send_email"),
        "permission-friend-order": ("permission_violation", None),
        "approval-timeout-4812": ("unrecovered_tool_error", None),
        "approval-malformed-4812": ("unrecovered_tool_error", None),
        "email-error-4812": ("unrecovered_tool_error", None),
    },
}


def run(suite: str, agent: str, out: Path, trials: int = 2) -> list[Any]:
    cfg = RunConfig(suite=load_suite(suite), agent=load_agent(agent), agent_spec=agent, trials=trials, out=out)
    asyncio.run(execute(cfg))
    return RunStore(out).load()


@pytest.mark.parametrize("suite", ["reimbursement", "refunds"])
def test_hasty_failures_are_attributed_to_their_known_causes(suite: str, tmp_path: Path) -> None:
    records = run(suite, "hasty", tmp_path / "hasty")
    failed = [r for r in records if r.outcome == "fail"]
    assert failed
    for r in failed:
        assert r.failure is not None and r.failure.evidence, r.case_id
        if r.failure.step is not None:
            assert 1 <= r.failure.step <= len(r.calls)
    by_case = {r.case_id: r for r in failed}
    for case_id, (category, tool) in KNOWN[suite].items():
        r = by_case[case_id]
        assert r.failure.category == category, (case_id, r.failure)
        call = r.calls[(r.failure.step or len(r.calls)) - 1]
        if tool is not None:
            assert call.tool == tool, (case_id, call)
        if category == "permission_violation":
            assert call.status in ("denied", "not_allowed")
        if category == "duplicate_write":
            assert call.committed
            earlier = [c for c in r.calls[: r.failure.step - 1] if c.tool == call.tool and c.committed]
            assert earlier and earlier[0].status == "fault"  # the first write committed, its response was lost
        if category == "unrecovered_tool_error":
            faulted = [c for c in r.calls if c.fault or c.status in ("tool_error", "exception")]
            # the first step after the fault, or the fault itself when the agent stopped there
            assert faulted and r.failure.step is not None and faulted[0].step <= r.failure.step


@pytest.mark.parametrize("suite", ["reimbursement", "refunds"])
def test_careful_has_no_failures_and_noop_fails_on_state(suite: str, tmp_path: Path) -> None:
    careful = run(suite, "careful", tmp_path / "careful", trials=1)
    assert all(r.outcome == "pass" and r.failure is None for r in careful)
    noop = run(suite, "noop", tmp_path / "noop", trials=1)
    assert all(r.outcome == "fail" and r.failure is not None and r.failure.step is None for r in noop)
    assert {r.failure.category for r in noop} <= {"wrong_final_state", "missing_information_in_reply"}


def test_traces_have_parent_child_structure(tmp_path: Path) -> None:
    r = run("refunds", "careful", tmp_path / "t", trials=1)[0]
    ids = {s.span_id for s in r.spans}
    root = [s for s in r.spans if s.parent_id is None]
    assert len(root) == 1 and root[0].kind == "trial"
    assert all(s.parent_id in ids for s in r.spans if s.parent_id is not None)
    tools = [s for s in r.spans if s.kind == "tool"]
    assert len(tools) == len(r.calls) and tools[0].attributes["gen_ai.tool.name"] == r.calls[0].tool
    assert r.trace_id and len(r.trace_id) == 32


PAYMENTS = Path(__file__).parent / "payments"


def run_fn(suite: str, agent: Any, out: Path, *, case: str | None = None, trials: int = 1) -> list[Any]:
    loaded = load_suite(suite)
    if case is not None:
        loaded.cases = [c for c in loaded.cases if c.id == case]
    cfg = RunConfig(suite=loaded, agent=agent, agent_spec="test", trials=trials, out=out)
    asyncio.run(execute(cfg))
    return RunStore(out).load()


@pytest.mark.parametrize(("suite", "case_id", "step", "tool"), [
    ("refunds", "email-error-4812", 3, "send_email"),  # the failed e-mail was the last call: nothing recovered it
    ("reimbursement", "hotel-level", 3, "create_reimbursement_ticket"),  # wrote without the required level check
])
def test_a_failure_whose_evidence_names_a_step_records_it(suite: str, case_id: str, step: int, tool: str,
                                                         tmp_path: Path) -> None:
    r = next(r for r in run(suite, "hasty", tmp_path / "hasty", trials=1) if r.case_id == case_id)
    assert r.outcome == "fail" and r.failure is not None
    assert r.failure.step == step and r.calls[step - 1].tool == tool, r.failure


@pytest.mark.parametrize("suite", ["reimbursement", "refunds"])
def test_every_failure_after_a_call_names_a_step_unless_it_is_about_the_end_state(suite: str, tmp_path: Path) -> None:
    end_state = {"wrong_final_state", "claimed_success_without_state", "missing_information_in_reply", "judge_failure",
                 "agent_error"}
    for r in run(suite, "hasty", tmp_path / "hasty", trials=1):
        if r.outcome == "fail" and r.failure.category not in end_state:
            assert r.failure.step is not None, (r.case_id, r.failure)


def test_a_crashing_agent_is_an_agent_error(tmp_path: Path) -> None:
    async def refund_then_crash(ep: Any) -> str:
        approval = (await ep.call("get_approval", {"order_id": 4812})).content
        await ep.call("issue_refund", {"order_id": 4812, "amount": approval["amount"], "method": "original_payment"})
        raise RuntimeError("template engine failed while writing the e-mail")

    [r] = run_fn("refunds", refund_then_crash, tmp_path / "crash", case="refund-4812")
    assert r.outcome == "fail" and r.end_reason == "agent_error"
    assert r.failure.category == "agent_error" and "template engine failed" in r.failure.evidence

    from passhat.agents import python_agent

    [p] = run_fn(str(PAYMENTS / "cases"), python_agent(f"{PAYMENTS / 'agents.py'}:crash_before_paying"), tmp_path / "p")
    assert p.failure.category == "agent_error" and "KeyError" in p.failure.evidence


def test_paying_twice_with_a_fresh_idempotency_key_is_a_duplicate_write(tmp_path: Path) -> None:
    from passhat.agents import python_agent

    [r] = run_fn(str(PAYMENTS / "cases"), python_agent(f"{PAYMENTS / 'agents.py'}:fresh_key_retry"), tmp_path / "fresh")
    assert r.outcome == "fail" and [c.committed for c in r.calls] == [True, True, True]
    assert r.failure.category == "duplicate_write" and r.failure.step == 3, r.failure
    assert "idempotency_key" in r.failure.evidence
    [same] = run_fn(str(PAYMENTS / "cases"), python_agent(f"{PAYMENTS / 'agents.py'}:same_key_retry"), tmp_path / "same")
    assert same.outcome == "pass"  # the same key: the service deduplicated, nothing to attribute
