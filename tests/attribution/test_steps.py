"""Every failure category names its step when it has one, and carries its evidence (issue 24).

A failed final-state check (``refunds.amount where order_id=4830: expected 40.0, actual 95.0``) used to
have ``step: null`` though the call that wrote the row was in the record. Now a wrong row points at the
call that last wrote it, a missing one at the call that should have written it, or at nothing with the
reason. The end-to-end cases run scripted agents on the built-in refunds suite; the rest of the table
drives ``attribute`` with the grades and calls each category comes from.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from passhat.attribution import PRIORITY, attribute
from passhat.cases import load_suite
from passhat.episode import Message
from passhat.graders import Grade
from passhat.runner import RunConfig, RunStore, execute
from passhat.tools import ToolCall
from passhat.world.diff import Diff, RowChange

REFUNDS = load_suite("refunds")
REIMBURSEMENT = load_suite("reimbursement")


def run_case(suite: Any, case_id: str, agent: Any, out: Path) -> Any:
    one = type(suite)(suite.name, suite.folder, [suite.case(case_id)], suite.files, suite.domains)
    asyncio.run(execute(RunConfig(suite=one, agent=agent, agent_spec="scripted", trials=1, out=out)))
    (record,) = RunStore(out).load()
    return record


async def refund(ep: Any, order_id: int, amount: float, **extra: Any) -> Any:
    return await ep.call("issue_refund", {"order_id": order_id, "amount": amount, "method": "original_payment", **extra})


def variant(tmp_path: Path, case_id: str, *, drop: str) -> Any:
    """The built-in case as a user's own case file, without its assertions of kind ``drop`` (so one finding
    is left to be the primary one)."""
    import yaml

    data = yaml.safe_load((REFUNDS.files[case_id]).read_text())
    data["assertions"] = [a for a in data["assertions"] if drop not in a]
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / f"{case_id}.yaml").write_text(yaml.safe_dump(data))
    return load_suite(str(folder))


def test_a_wrong_value_points_at_the_call_that_wrote_it(tmp_path: Path) -> None:
    async def refunds_the_total(ep: Any) -> str:
        await ep.call("get_order", {"order_id": 4830})
        await ep.call("get_approval", {"order_id": 4830})
        await refund(ep, 4830, 95.0)
        await ep.call("send_email", {"order_id": 4830, "template": "refund", "body": "We refunded 95.00."})
        return "We refunded 95.00 to your card."

    r = run_case(REFUNDS, "over-amount-4830", refunds_the_total, tmp_path / "run")
    assert r.outcome == "fail" and r.failure.category == "wrong_final_state", r.failure
    assert r.failure.step == 3 and r.calls[2].tool == "issue_refund"
    assert "refunds.amount where order_id=4830: expected 40.0, actual 95.0" in r.failure.evidence
    assert "issue_refund at step 3 inserted refunds ['R-" in r.failure.evidence
    assert ["refunds", [r.calls[2].hidden_result["refund_id"] if r.calls[2].hidden_result else
                        r.calls[2].result["refund_id"]]] in [list(x) for x in r.calls[2].changed_rows]


def test_a_missing_row_points_at_the_write_that_did_not_complete(tmp_path: Path) -> None:
    async def amount_as_text(ep: Any) -> str:
        approval = (await ep.call("get_approval", {"order_id": 4812})).content
        await ep.call("issue_refund", {"order_id": 4812, "amount": str(approval["amount"]), "method": "original_payment"})
        return "I could not get to it."

    r = run_case(REFUNDS, "refund-4812", amount_as_text, tmp_path / "run")
    assert r.calls[1].status == "invalid_arguments" and r.calls[1].changed_rows is None
    assert r.failure.category == "wrong_final_state" and r.failure.step == 2, r.failure
    assert ("no call wrote a row of refunds where order_id=4812; the last write tried, issue_refund at step 2, did "
            "not complete (invalid_arguments: invalid arguments: amount: Input should be a valid number)") in r.failure.evidence


def test_a_missing_row_points_at_the_write_that_went_to_another_row(tmp_path: Path) -> None:
    async def wrong_order(ep: Any) -> str:
        await ep.call("get_approval", {"order_id": 4812})
        await refund(ep, 4813, 74.0)
        return "OK"

    suite = variant(tmp_path, "refund-4812", drop="unchanged_except")
    r = run_case(suite, "refund-4812", wrong_order, tmp_path / "run")
    assert r.failure.category == "wrong_final_state" and r.failure.step == 2, r.failure
    assert "no row of refunds where order_id=4812 was written; issue_refund at step 2 wrote refunds ['R-" in \
        r.failure.evidence


@pytest.mark.parametrize(("agent", "words"), [
    ("reads_only", "no call wrote a row of refunds where order_id=4812: the agent made no write"),
    ("emails_only", "the agent's writes (send_email at step 2) changed other tables"),
])
def test_a_missing_row_no_call_should_have_written_has_no_step_and_says_why(tmp_path: Path, agent: str,
                                                                           words: str) -> None:
    async def reads_only(ep: Any) -> str:
        await ep.call("get_approval", {"order_id": 4812})
        return "I looked at it."

    async def emails_only(ep: Any) -> str:
        await ep.call("get_approval", {"order_id": 4812})
        await ep.call("send_email", {"order_id": 4812, "template": "general", "body": "We are on it."})
        return "I wrote to you."

    suite = variant(tmp_path, "refund-4812", drop="unchanged_except")
    r = run_case(suite, "refund-4812", {"reads_only": reads_only, "emails_only": emails_only}[agent], tmp_path / "run")
    assert r.failure.category == "wrong_final_state" and r.failure.step is None, r.failure
    assert words in r.failure.evidence


def test_a_change_outside_the_scope_points_at_the_call_that_made_it(tmp_path: Path) -> None:
    """Not at the first write (the refund, inside the scope) as before: at the note on another order."""
    async def refunds_and_scribbles(ep: Any) -> str:
        approval = (await ep.call("get_approval", {"order_id": 4812})).content
        await refund(ep, 4812, approval["amount"])
        await ep.call("send_email", {"order_id": 4812, "template": "refund", "body": "Refunded."})
        await ep.call("add_note", {"order_id": 4813, "body": "customer is nice"})
        return "Your refund has been processed."

    r = run_case(REFUNDS, "refund-4812", refunds_and_scribbles, tmp_path / "run")
    assert r.failure.category == "side_effect_outside_scope" and r.failure.step == 4, r.failure
    assert "add_note at step 4 was the first to write outside it (inserted notes ['N-" in r.failure.evidence


def test_hasty_state_failures_name_the_writing_call(tmp_path: Path) -> None:
    """The issue's own examples, from hasty on both built-in suites: every wrong_final_state with a write behind
    it names that write."""
    from passhat.agents import load_agent

    named = {}
    for suite in (REFUNDS, REIMBURSEMENT):
        out = tmp_path / suite.name
        asyncio.run(execute(RunConfig(suite=suite, agent=load_agent("hasty"), agent_spec="hasty", trials=1, out=out)))
        for r in RunStore(out).load():
            named[r.case_id] = r.failure
            if r.failure is None or r.failure.category != "wrong_final_state":
                continue
            if r.failure.step is None:
                assert "no call wrote" in r.failure.evidence or "no tool call wrote" in r.failure.evidence, r.failure
            else:
                call = r.calls[r.failure.step - 1]
                assert f"{call.tool} at step {call.step}" in r.failure.evidence, (r.case_id, r.failure)
                assert call.changed_rows or not call.committed, (r.case_id, call)
    over, outdated = named["over-amount-4830"], named["outdated-clause"]  # the issue's two examples
    assert over.step == 2 and "actual 95.0; issue_refund at step 2 inserted refunds" in over.evidence, over
    assert outdated.step == 3 and "create_reimbursement_ticket at step 3 inserted tickets" in outdated.evidence


def test_a_row_written_twice_points_at_the_later_call() -> None:
    grade_ = Grade(grader="state", name="field_equals: the refund is exactly the approved amount", passed=False,
                   reason="refunds.amount where order_id=4812: expected 118.5, actual 259.0")
    calls = [call(1, "issue_refund", arguments={"amount": 118.5}, changed_rows=[("refunds", ["R-1"])]),
             call(2, "list_orders"),
             call(3, "issue_refund", arguments={"amount": 259.0}, changed_rows=[("refunds", ["R-1"]), ("ledger", ["L-1"])])]
    f = attribute(CASE, "fail", [grade_], calls, [], "agent_done", None, Diff({"refunds": [REFUND_ROW]}))
    assert f is not None and f.step == 3 and "issue_refund at step 3 inserted refunds ['R-1']" in f.evidence


def test_a_record_without_row_lists_says_so(tmp_path: Path) -> None:
    """Records written before calls listed their rows are re-graded with ``step: null`` and the reason."""
    case = REFUNDS.case("refund-4812")
    call = ToolCall(step=1, tool="issue_refund", arguments={}, status="ok", kind="write", committed=True)
    grade = Grade(grader="state", name="row_count: one refund, not two", passed=False,
                  reason="count of refunds where order_id=4812: expected 1, actual 2")
    f = attribute(case, "fail", [grade], [call], [], "agent_done", None, Diff())
    assert f is not None and f.step is None and "the record does not say which call wrote which row" in f.evidence


# --- every category: the step it names and its evidence -------------------------------------------------------

CASE = REFUNDS.case("refund-4812")


def grade(grader: str, name: str, reason: str, **details: Any) -> Grade:
    return Grade(grader=grader, name=name, passed=False, reason=reason, details=details)  # type: ignore[arg-type]


def call(step: int, tool: str, status: str = "ok", **kw: Any) -> ToolCall:
    kind = kw.pop("kind", "write" if tool in ("issue_refund", "send_email", "add_note") else "read")
    return ToolCall(step=step, tool=tool, arguments=kw.pop("arguments", {}), status=status, kind=kind,  # type: ignore[arg-type]
                    committed=kw.pop("committed", status == "ok"), changed_rows=kw.pop("changed_rows", []), **kw)


REFUND_ROW = RowChange("refunds", ("R-1",), None, {"id": "R-1", "order_id": 4812, "amount": 259.0})
TABLE: list[tuple[str, dict[str, Any], int | None, str]] = [
    ("permission_violation", {"calls": [call(1, "get_order", "denied", error="not yours")]}, 1, "get_order: not yours"),
    ("forbidden_or_unknown_tool", {"calls": [call(1, "fly", "unknown_tool", error="unknown tool")]}, 1, "fly"),
    ("duplicate_write", {"calls": [call(1, "issue_refund", "fault", committed=True, arguments={"a": 1}),
                                   call(2, "issue_refund", arguments={"a": 1})],
                         "grades": [grade("state", "row_count: one refund, not two", "expected 1, actual 2")]},
     2, "issue_refund committed again at step 2"),
    ("tool_loop", {"calls": [call(i, "get_order", arguments={"order_id": 1}) for i in (1, 2, 3)],
                   "grades": [grade("rules", "no_loop", "get_order repeated 3 times")]}, 3, "repeated"),
    ("skipped_verification", {"calls": [call(1, "issue_refund")],
                              "grades": [grade("trajectory", "required get_approval", "get_approval was never called")]},
     1, "issue_refund at step 1 went ahead without it"),
    ("unrecovered_tool_error", {"calls": [call(1, "get_approval", "fault", fault="timeout on get_approval call 1",
                                               error="timeout"), call(2, "list_orders")],
                                "grades": [grade("reply", "reply_contains", "the reply does not mention 118.5")]},
     2, "after get_approval at step 1"),
    ("side_effect_outside_scope", {"calls": [call(1, "add_note", changed_rows=[("notes", ["N-1"])])],
                                   "diff": Diff({"notes": [RowChange("notes", ("N-1",), None, {"id": "N-1", "order_id": 4813})]}),
                                   "grades": [grade("state", "unchanged_except: nothing outside the refund of order 4812 "
                                                    "changed", "1 change(s) outside the allowed scope")]},
     1, "add_note at step 1 was the first to write outside it"),
    ("invalid_arguments", {"calls": [call(1, "issue_refund", "invalid_arguments", error="amount: not a number")],
                           "grades": [grade("rules", "valid_arguments", "1 call with invalid arguments")]},
     1, "amount: not a number"),
    ("claimed_success_without_state", {"calls": [call(1, "get_approval")], "reply": "Your refund was processed.",
                                       "grades": [grade("state", "row_count: one refund, not two",
                                                        "count of refunds where order_id=4812: expected 1, actual 0")]},
     None, "the agent made no write; yet the reply says"),
    ("wrong_final_state", {"calls": [call(1, "issue_refund", changed_rows=[("refunds", ["R-1"])])],
                           "diff": Diff({"refunds": [REFUND_ROW]}),
                           "grades": [grade("state", "field_equals: the refund is exactly the approved amount",
                                            "refunds.amount where order_id=4812: expected 118.5, actual 259.0")]},
     1, "issue_refund at step 1 inserted refunds ['R-1']"),
    ("limit_exceeded", {"calls": [call(1, "get_order"), call(2, "get_order")],
                        "grades": [grade("rules", "within_limits", "step limit reached")]}, 2, "step limit"),
    ("missing_information_in_reply", {"grades": [grade("reply", "reply_contains", "no 118.5 in the reply")]},
     None, "no 118.5"),
    ("judge_failure", {"grades": [grade("judge", "judge: tone", "the judge says: rude")]}, None, "rude"),
    ("agent_error", {"calls": [call(1, "get_order")], "end_reason": "agent_error", "error": "Traceback\nKeyError: 'x'"},
     None, "the agent raised after step 1 (get_order): KeyError: 'x'"),
    ("infrastructure_error", {"outcome": "error", "error": "provider 503"}, None, "provider 503"),
]


def test_the_table_covers_every_category() -> None:
    assert [row[0] for row in TABLE] == list(PRIORITY)


@pytest.mark.parametrize(("category", "given", "step", "words"), TABLE, ids=[row[0] for row in TABLE])
def test_each_category_names_its_step_and_evidence(category: str, given: dict[str, Any], step: int | None,
                                                   words: str) -> None:
    messages = [Message(role="agent", text=given["reply"])] if "reply" in given else []
    f = attribute(CASE, given.get("outcome", "fail"), given.get("grades", [grade("state", "x", "failed")]),
                  given.get("calls", []), messages, given.get("end_reason", "agent_done"), given.get("error"),
                  given.get("diff", Diff()))
    assert f is not None and f.category == category, f
    assert f.step == step and words in f.evidence, f
