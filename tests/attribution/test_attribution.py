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
            assert faulted and faulted[0].step < (r.failure.step or len(r.calls) + 1)


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
