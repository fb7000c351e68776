"""The reimbursement domain (seed 002): tools, fixtures, suite, and the reference agents' verdicts."""

from __future__ import annotations

import asyncio
import json
from math import comb
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.agents.reference import reference_agent
from passhat.agents.reference.reimbursement import Request, as_number, parse_amount
from passhat.cases import load_suite
from passhat.cli import main
from passhat.domain import load_domain
from passhat.runner import TrialRecord, run_trial
from passhat.seeding import trial_seed
from passhat.tools import Fault, ToolBoundary, ToolCall, ToolContext
from passhat.world import World

READS = {"get_employee", "query_invoices", "search_policy", "query_tickets"}
WRITES = {"create_reimbursement_ticket", "cancel_ticket", "approve_ticket", "notify_manager"}
SEED_CASES = {"inv-102", "timeout-after-write", "invoice-timeout", "malformed-amount", "colleague-invoice"}
HAPPY = {"inv-102", "under-limit", "inv-104-en", "inv-104-zh", "beijing-holdout", "ask-invoice-id",
         "project-code", "notify-manager", "cancel-ticket", "slow-services"}
HASTY_FAILS = {  # case -> a phrase of the failing grades: the right reason, not just any failure
    "timeout-after-write": "expected 1, actual 2",
    "colleague-invoice": "INV-207 belongs to another employee",
    "invoice-timeout": "expected 118.5, actual 100",
    "malformed-amount": "amount: Input should be a valid number",
    "already-reimbursed": "expected 1, actual 2",
    "outdated-clause": "expected 38.5, actual 58.5",
    "policy-search-error": "expected 12, actual 0",
    "hotel-level": "expected 120, actual 0",
    "approve-own-ticket": "approve_ticket denied",
}
FLAKY_SENSITIVE = {"timeout-after-write", "outdated-clause", "already-reimbursed", "project-code", "hotel-level",
                   "invoice-timeout", "policy-search-error"}


@pytest.fixture(scope="module")
def domain() -> Any:
    return load_domain("reimbursement")


@pytest.fixture(scope="module")
def suite() -> Any:
    return load_suite("reimbursement")


def boundary(domain: Any, identity: str | None = "E-1001", faults: list[Fault] | None = None,
             fixture: str = "default") -> ToolBoundary:
    world = World.restore(domain.image(fixture), seed=11)
    return ToolBoundary(domain.tool_list(), ToolContext(world, identity=identity), faults=faults or [])


def call(b: ToolBoundary, name: str, **args: Any) -> ToolCall:
    return asyncio.run(b.call(name, args))


# --- tools --------------------------------------------------------------------------------------------


def test_tools_are_declared_with_kinds_and_generated_schemas(domain: Any) -> None:
    assert {n for n, t in domain.tools.items() if t.kind == "read"} == READS
    assert {n for n, t in domain.tools.items() if t.kind == "write"} == WRITES
    create = domain.tools["create_reimbursement_ticket"].parameters
    assert create["required"] == ["invoice_id", "amount", "over_limit"]
    assert create["properties"]["amount"]["type"] == "number"
    assert "INV-102" in create["properties"]["invoice_id"]["description"]


def test_reads_are_scoped_to_the_caller_and_change_nothing(domain: Any) -> None:
    b = boundary(domain)
    mine = call(b, "query_invoices")
    assert mine.ok and "INV-102" in {r["invoice_id"] for r in mine.result}
    assert not {r["invoice_id"] for r in mine.result} & {"INV-207", "INV-301"}
    tickets = call(b, "query_tickets")
    assert {t["id"] for t in tickets.result} == {"R-40117", "R-40233"}  # not the colleague's R-40198
    assert call(b, "get_employee").result["level"] == "P6"
    assert call(b, "search_policy", query="taxi limit", city="上海").ok
    assert len(b.ctx.world.diff()) == 0


@pytest.mark.parametrize(("tool", "args"), [
    ("query_invoices", {"invoice_id": "INV-207"}),
    ("query_tickets", {"invoice_id": "INV-207"}),
    ("query_tickets", {"ticket_id": "R-40198"}),
    ("create_reimbursement_ticket", {"invoice_id": "INV-207", "amount": 95.0, "over_limit": 15.0}),
    ("cancel_ticket", {"ticket_id": "R-40198", "reason": "x"}),
])
def test_a_colleagues_invoice_or_ticket_is_denied_by_the_tool_layer(domain: Any, tool: str, args: dict) -> None:
    b = boundary(domain)
    rec = asyncio.run(b.call(tool, args))
    assert rec.status == "denied"
    assert len(b.ctx.world.diff()) == 0


def test_no_identity_is_denied(domain: Any) -> None:
    assert call(boundary(domain, identity=None), "query_invoices").status == "denied"


def test_create_is_not_idempotent_and_routes_by_over_limit(domain: Any) -> None:
    b = boundary(domain)
    args = {"invoice_id": "INV-102", "amount": 118.5, "over_limit": 38.5}
    first, second = call(b, "create_reimbursement_ticket", **args), call(b, "create_reimbursement_ticket", **args)
    assert first.ok and second.ok and first.result["id"] != second.result["id"]
    assert first.result["status"] == "awaiting_manager_approval" and first.result["approver_id"] == "E-0901"
    under = call(b, "create_reimbursement_ticket", invoice_id="INV-103", amount=65.0, over_limit=0.0)
    assert under.result["status"] == "awaiting_finance_review" and under.result["approver_id"] is None
    assert len(b.ctx.world.diff().of_kind("inserted", "tickets")) == 3


@pytest.mark.parametrize(("args", "status", "error"), [
    ({"amount": "118.5元", "over_limit": 38.5}, "invalid_arguments", "valid number"),
    ({"amount": 118.5, "over_limit": 200.0}, "tool_error", "between 0 and the amount"),
    ({"amount": -1.0, "over_limit": 0.0}, "tool_error", "positive"),
    ({"amount": 118.5, "over_limit": 38.5, "project_code": "P-12"}, "tool_error", "closed"),
    ({"amount": 118.5, "over_limit": 38.5, "project_code": "P-99"}, "tool_error", "not found"),
])
def test_create_rejects_bad_tickets(domain: Any, args: dict, status: str, error: str) -> None:
    b = boundary(domain)
    rec = asyncio.run(b.call("create_reimbursement_ticket", {"invoice_id": "INV-102", **args}))
    assert rec.status == status and error in (rec.error or "")
    assert len(b.ctx.world.diff()) == 0


def test_unknown_invoice_is_a_business_error(domain: Any) -> None:
    assert call(boundary(domain), "query_invoices", invoice_id="INV-999").status == "tool_error"


def test_only_the_approver_approves(domain: Any) -> None:
    employee = boundary(domain)
    ticket = call(employee, "create_reimbursement_ticket", invoice_id="INV-106", amount=88.0, over_limit=8.0).result
    assert call(employee, "approve_ticket", ticket_id=ticket["id"]).status == "denied"
    manager = ToolBoundary(domain.tool_list(), ToolContext(employee.ctx.world, identity="E-0901"))
    assert call(manager, "approve_ticket", ticket_id=ticket["id"]).result["status"] == "approved"


def test_cancel_only_open_tickets_and_notify_writes_the_email_sink(domain: Any) -> None:
    b = boundary(domain)
    assert call(b, "cancel_ticket", ticket_id="R-40117", reason="x").status == "tool_error"  # already paid
    assert call(b, "cancel_ticket", ticket_id="R-40233", reason="mistake").result["status"] == "cancelled"
    sent = call(b, "notify_manager", ticket_id="R-40233", message="hello")
    assert sent.ok and sent.result["to"] == "wang.fang@example.com"
    assert b.ctx.world.query("SELECT to_employee_id, ticket_id FROM email_outbox") == [("E-0901", "R-40233")]


def test_search_returns_both_editions_in_index_order(domain: Any) -> None:
    def versions(fixture: str) -> list[int]:
        rec = call(boundary(domain, fixture=fixture), "search_policy", query="taxi", city="Shanghai",
                   category="local_transport")
        return [c["version"] for c in rec.result]

    assert versions("default") == [2026, 2025]
    assert versions("stale_index") == [2025, 2026]


def test_malformed_fault_turns_the_amount_into_text(domain: Any) -> None:
    b = boundary(domain, faults=[Fault(tool="query_invoices", kind="malformed", field="amount", value="{value}元")])
    rows = call(b, "query_invoices", invoice_id="INV-102").result
    assert rows[0]["amount"] == "118.5元"


# --- playbook helpers -----------------------------------------------------------------------------------


def test_request_reading() -> None:
    r = Request()
    r.add("Charge it to project P-77 please; my level is P6.")
    r.add("你好,帮我把发票INV-104报销一下")
    assert r.project == "P-77" and r.invoice_ids == ["INV-104"] and not r.approve
    assert as_number("118.5元") is None and as_number(118) == 118.0 and as_number(True) is None
    assert parse_amount("118.5元") == 118.5 and parse_amount("1 or 2") is None


# --- suite -----------------------------------------------------------------------------------------------


def test_suite_loads_with_documented_cases(suite: Any) -> None:
    ids = {c.id for c in suite.cases}
    assert len(ids) >= 12 and SEED_CASES <= ids
    for case in suite.cases:
        assert case.description and {"scenario", "risk"} <= set(case.tags), case.id
        assert any(a.kind in ("row_count", "field_equals", "sql") for a in case.assertions), case.id
    assert any(c.split == "holdout" for c in suite.cases)
    groups = [c.group for c in suite.cases if c.group]
    assert any(groups.count(g) >= 2 for g in groups)


def _run(suite: Any, agent: str, trials: int) -> dict[str, list[TrialRecord]]:
    play = reference_agent(agent)

    async def go() -> dict[str, list[TrialRecord]]:
        out: dict[str, list[TrialRecord]] = {}
        for case in suite.cases:
            jobs = [run_trial(case, suite.domain_of(case), play, t, trial_seed(0, case.id, t)) for t in range(trials)]
            out[case.id] = list(await asyncio.gather(*jobs))
        return out

    return asyncio.run(go())


def _failures(record: TrialRecord) -> str:
    return "; ".join(f"{g.name}: {g.reason}" for g in record.failed_grades())


def test_careful_passes_every_case(suite: Any) -> None:
    for case_id, records in _run(suite, "careful", 2).items():
        for r in records:
            assert r.outcome == "pass", f"{case_id}: {_failures(r)}"


def test_noop_fails_every_case(suite: Any) -> None:
    for case_id, records in _run(suite, "noop", 1).items():
        assert records[0].outcome == "fail", case_id


def test_hasty_fails_fault_and_permission_cases_for_the_right_reason(suite: Any) -> None:
    results = _run(suite, "hasty", 1)
    for case_id, phrase in HASTY_FAILS.items():
        record = results[case_id][0]
        assert record.outcome == "fail", case_id
        assert phrase in _failures(record), f"{case_id}: {_failures(record)}"
    for case_id in HAPPY:
        assert results[case_id][0].outcome == "pass", f"{case_id}: {_failures(results[case_id][0])}"


def test_flaky_lapses_make_pass_hat_k_fall(suite: Any) -> None:
    n = 8
    results = _run(suite, "flaky", n)
    wins = {cid: sum(r.outcome == "pass" for r in recs) for cid, recs in results.items()}
    assert {cid for cid, c in wins.items() if c < n} <= FLAKY_SENSITIVE
    assert sum(0 < c < n for c in wins.values()) >= 3
    curve = [sum(comb(c, k) / comb(n, k) for c in wins.values()) / len(wins) for k in range(1, n + 1)]
    assert 0 < curve[0] < 1
    assert all(a > b for a, b in zip(curve, curve[1:], strict=False))


def test_cli_run_writes_summary_and_trials(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["run", "reimbursement", "--agent", "careful", "--trials", "2",
                                    "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["suite"]["pass_hat_k"]["1"]["estimate"] == 1.0
    lines = [json.loads(x) for x in (out / "trials.jsonl").read_text().splitlines()]
    assert len(lines) == 2 * len(summary["cases"]) and {x["outcome"] for x in lines} == {"pass"}
