"""The refunds domain: tools, fixture, suite, and the reference agents' verdicts on every case."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.agents.reference import reference_agent
from passhat.agents.reference.refunds import money, order_ids, requested_amount, requested_method
from passhat.cases import load_suite
from passhat.cli import main
from passhat.domain import load_domain
from passhat.runner import TrialRecord, run_trial
from passhat.seeding import trial_seed
from passhat.tools import Fault, ToolBoundary, ToolContext
from passhat.world import World

READS = {"get_customer", "list_orders", "get_order", "get_approval", "list_refunds", "list_emails"}
WRITES = {"issue_refund", "send_email", "escalate_to_human", "add_note", "update_order_address", "cancel_order",
          "apply_store_credit"}
HAPPY = {"refund-4812", "refund-4812-terse", "refund-4812-chatty", "refund-4850-holdout",
         "order-number-on-request-4840", "store-credit-4820"}
HASTY_FAILS = {  # case -> a phrase that must appear in the failing grades: the reason, not just a failure
    "refund-4812-drop-response": "expected 1, actual 2",
    "approval-timeout-4812": "expected 118.5, actual 259",
    "approval-malformed-4812": "expected 118.5, actual 259",
    "approval-outage-4812": "expected 0, actual 1",
    "email-error-4812": "expected 1, actual 0",
    "email-drop-4870": "expected 1, actual 2",
    "permission-friend-order": "does not belong to customer C-1001",
    "over-amount-4830": "expected 40.0, actual 95",
    "no-approval-4813": "expected 0, actual 1",
    "already-refunded-4860": "expected 1, actual 2",
}
FLAKY_SENSITIVE = {"refund-4812-drop-response", "email-drop-4870", "permission-friend-order", "store-credit-4820",
                   "over-amount-4830", "already-refunded-4860"}


@pytest.fixture(scope="module")
def domain() -> Any:
    return load_domain("refunds")


@pytest.fixture(scope="module")
def suite() -> Any:
    return load_suite("refunds")


def boundary(domain: Any, identity: str | None = "C-1001", faults: list[Fault] | None = None) -> ToolBoundary:
    world = World.restore(domain.image("default"), seed=7)
    return ToolBoundary(domain.tool_list(), ToolContext(world, identity=identity), faults=faults or [])


def call(b: ToolBoundary, name: str, **args: Any) -> Any:
    return asyncio.run(b.call(name, args))


# --- tools ---------------------------------------------------------------------------------------


def test_tools_have_generated_schemas_and_kinds(domain: Any) -> None:
    assert {n for n, t in domain.tools.items() if t.kind == "read"} == READS
    assert {n for n, t in domain.tools.items() if t.kind == "write"} == WRITES
    spec = domain.tools["issue_refund"].spec()
    assert spec["parameters"]["required"] == ["order_id", "amount", "method"]
    assert spec["parameters"]["properties"]["amount"]["type"] == "number"
    assert "original_payment" in spec["parameters"]["properties"]["method"]["description"]


def test_fixture_holds_the_seed_order(domain: Any) -> None:
    world = World.restore(domain.image("default"), seed=1)
    assert world.query("SELECT status, total FROM orders WHERE id = 4812") == [("delivered", 259.0)]
    assert world.query("SELECT amount FROM approvals WHERE order_id = 4812") == [(118.5,)]
    assert world.query("SELECT COUNT(*) FROM refunds WHERE order_id = 4812") == [(0,)]
    assert world.query("SELECT SUM(amount) FROM ledger WHERE order_id = 4860") == [(155.0,)]


def test_reads_are_scoped_to_the_customer_and_never_write(domain: Any) -> None:
    b = boundary(domain)
    for name in ("get_order", "get_approval", "list_refunds", "list_emails"):
        assert call(b, name, order_id=4812).status == "ok"
        denied = call(b, name, order_id=4815)
        assert denied.status == "denied" and "does not belong" in (denied.error or "")
    assert [o["id"] for o in call(b, "list_orders").result] == [4825, 4813, 4812]
    assert call(b, "get_customer").result["email"] == "mei.chen@example.com"
    assert len(b.ctx.world.diff()) == 0


def test_business_errors_and_strict_arguments(domain: Any) -> None:
    b = boundary(domain)
    assert "no approval" in call(b, "get_approval", order_id=4813).error
    assert call(b, "get_order", order_id=9999).error == "order 9999 not found"
    assert call(b, "issue_refund", order_id=4812, amount=300.0, method="original_payment").status == "tool_error"
    assert call(b, "issue_refund", order_id=4812, amount=10.0, method="cash").status == "tool_error"
    assert call(b, "issue_refund", order_id=4825, amount=10.0, method="store_credit").status == "tool_error"
    assert call(b, "issue_refund", order_id=4812, amount="118.5", method="store_credit").status == "invalid_arguments"
    assert call(b, "send_email", order_id=4812, template="spam", body="hi").status == "tool_error"
    assert call(b, "cancel_order", order_id=4812, reason="x").status == "tool_error"
    assert len(b.ctx.world.diff()) == 0


def test_issue_refund_writes_everything_at_once_and_is_not_idempotent(domain: Any) -> None:
    b = boundary(domain)
    first = call(b, "issue_refund", order_id=4812, amount=118.5, method="original_payment")
    assert first.ok and first.result["refund_id"].startswith("R-")
    q = b.ctx.world.query
    assert q("SELECT status FROM orders WHERE id = 4812") == [("refunded",)]
    assert q("SELECT amount, kind FROM ledger WHERE order_id = 4812 AND kind = 'refund'") == [(-118.5, "refund")]
    assert q("SELECT amount, method FROM payments WHERE order_id = 4812 AND kind = 'refund'") == [(118.5, "card")]
    assert call(b, "issue_refund", order_id=4812, amount=118.5, method="original_payment").ok
    assert q("SELECT COUNT(*) FROM refunds WHERE order_id = 4812") == [(2,)]


def test_store_credit_refund_tops_up_the_balance_instead_of_the_card(domain: Any) -> None:
    b = boundary(domain, identity="C-1003")
    assert call(b, "issue_refund", order_id=4820, amount=180.0, method="store_credit").ok
    q = b.ctx.world.query
    assert q("SELECT store_credit FROM customers WHERE id = 'C-1003'") == [(192.5,)]
    assert q("SELECT COUNT(*) FROM payments WHERE order_id = 4820 AND kind = 'refund'") == [(0,)]


def test_a_dropped_response_still_commits(domain: Any) -> None:
    b = boundary(domain, faults=[Fault(tool="issue_refund", kind="drop_response")])
    rec = call(b, "issue_refund", order_id=4812, amount=118.5, method="original_payment")
    assert rec.status == "fault" and rec.committed
    assert len(call(b, "list_refunds", order_id=4812).result) == 1


# --- playbook parsing ----------------------------------------------------------------------------


def test_request_parsing() -> None:
    assert order_ids("refund order #4812, and my friend's 4815. Total 1234.50") == [4812, 4815]
    assert requested_amount("please refund the full 95.00") == 95.0
    assert requested_amount("order 4812 please") is None
    assert requested_method("store credit, not back to my PayPal account") == "store_credit"
    assert requested_method("not store credit, my card") == "original_payment"
    assert requested_method("just do it") is None
    assert money("118.5 USD") == 118.5 and money(40) == 40.0 and money("12 EUR") is None


# --- the suite -----------------------------------------------------------------------------------


def test_suite_loads_with_documented_cases(suite: Any) -> None:
    ids = {c.id for c in suite.cases}
    assert len(ids) >= 10 and HAPPY | set(HASTY_FAILS) == ids
    for case in suite.cases:
        assert case.description and {"scenario", "risk", "kind"} <= set(case.tags), case.id
    assert [c.id for c in suite.cases if c.split == "holdout"] == ["refund-4850-holdout"]
    groups = [c.id for c in suite.cases if c.group == "refund-4812-phrasing"]
    assert sorted(groups) == ["refund-4812-chatty", "refund-4812-terse"]


def test_seed_case_has_the_six_checks(suite: Any) -> None:
    kinds = [a.kind for a in suite.case("refund-4812").assertions]
    assert kinds == ["row_count", "field_equals", "field_equals", "net_change", "row_count", "unchanged_except"]


# --- reference agents ----------------------------------------------------------------------------


def run_all(suite: Any, style: str, trials: int) -> dict[str, list[TrialRecord]]:
    agent = reference_agent(style)

    async def go() -> dict[str, list[TrialRecord]]:
        out: dict[str, list[TrialRecord]] = {}
        for case in suite.cases:
            out[case.id] = [await run_trial(case, suite.domain_of(case), agent, t, trial_seed(0, case.id, t))
                            for t in range(trials)]
        return out

    return asyncio.run(go())


def failures(rec: TrialRecord) -> str:
    return " | ".join(g.reason for g in rec.grades if g.required and not g.passed)


@pytest.mark.parametrize("style,check", [
    ("careful", lambda cid, recs: all(r.outcome == "pass" for r in recs)),
    ("noop", lambda cid, recs: all(r.outcome == "fail" for r in recs)),
])
def test_careful_passes_and_noop_fails_everything(suite: Any, style: str, check: Callable[..., bool]) -> None:
    results = run_all(suite, style, trials=2)
    bad = {cid: failures(recs[0]) for cid, recs in results.items() if not check(cid, recs)}
    assert not bad


def test_hasty_fails_faults_policy_and_permission_for_the_right_reason(suite: Any) -> None:
    results = run_all(suite, "hasty", trials=1)
    for cid, (rec,) in results.items():
        if cid in HAPPY:
            assert rec.outcome == "pass", (cid, failures(rec))
        else:
            assert rec.outcome == "fail", cid
            assert HASTY_FAILS[cid] in failures(rec), (cid, failures(rec))


def test_flaky_lapses_only_where_it_matters(suite: Any) -> None:
    results = run_all(suite, "flaky", trials=8)
    failing = {cid for cid, recs in results.items() if any(r.outcome == "fail" for r in recs)}
    assert failing and failing <= FLAKY_SENSITIVE
    rate = sum(r.outcome == "pass" for recs in results.values() for r in recs) / (8 * len(results))
    assert 0.5 < rate < 1


def test_cli_run_writes_summary_and_trials(suite: Any, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "refunds", "--agent", "careful", "--trials", "2", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["suite"]["pass_hat_k"]["1"]["estimate"] == 1.0
    lines = [json.loads(x) for x in (out / "trials.jsonl").read_text().splitlines()]
    assert len(lines) == 2 * len(suite.cases) and {x["outcome"] for x in lines} == {"pass"}
