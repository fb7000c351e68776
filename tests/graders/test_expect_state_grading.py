"""``expect_state`` and column-scoped ``unchanged_except``, graded on real trials of the reimbursement domain."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from passhat.cases import load_suite
from passhat.graders import Grade
from passhat.runner import run_trial

Agent = Callable[[Any], Awaitable[str]]
HEAD = """\
id: case
domain: reimbursement
instruction: File my taxi invoice INV-102.
user: {identity: E-1001}
reference:
  - {tool: create_reimbursement_ticket, args: {invoice_id: INV-102, amount: 118.5, over_limit: 38.5}}
assertions:
"""
FILE_102 = {"invoice_id": "INV-102", "amount": 118.5, "over_limit": 38.5}


def grades(tmp_path: Path, assertion: str, agent: Agent, head: str = HEAD) -> list[Grade]:
    """The state grades of one real trial of a one-assertion case."""
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    (folder / "case.yaml").write_text(head + f"  - {assertion}\n")
    suite = load_suite(str(folder))
    case = suite.cases[0]
    record = asyncio.run(run_trial(case, suite.domain_of(case), agent, 0, seed=11))
    return [g for g in record.grades if g.grader == "state"]


def verdict(tmp_path: Path, assertion: str, agent: Agent, head: str = HEAD) -> tuple[bool, str]:
    [grade] = grades(tmp_path, assertion, agent, head)
    return grade.passed, grade.reason


def files(*calls: tuple[str, dict[str, Any]]) -> Agent:
    async def agent(ep: Any) -> str:
        for name, args in calls:
            result = await ep.call(name, args)
            assert result.ok, result.error
        return "done"
    return agent


EXACT = files(("create_reimbursement_ticket", FILE_102))
LOOKS_FIRST = files(("query_invoices", {"invoice_id": "INV-102"}), ("create_reimbursement_ticket", FILE_102))
REFERENCE = "expect_state: {reference: true, ignore: {tickets: [created_at, updated_at]}}"


# --- reference form ------------------------------------------------------------------------------------


def test_doing_exactly_the_reference_passes_though_generated_ids_differ(tmp_path: Path) -> None:
    [grade] = grades(tmp_path, "expect_state: reference", EXACT)
    assert (grade.name, grade.passed, grade.reason) == (
        "expect_state(reference)", True, "the final state equals the reference's (1 row change(s))")


@pytest.mark.parametrize(
    ("agent", "words"),
    [
        (files(), "tickets ['R-"),  # less: nothing filed
        (files(("create_reimbursement_ticket", FILE_102), ("notify_manager", {"ticket_id": "R-40233", "message": "hi"})),
         "email_outbox ['MSG-"),  # more: an email nobody asked for
        (files(("create_reimbursement_ticket", {**FILE_102, "amount": 120.0, "over_limit": 40.0})),
         "amount expected 118.5, actual 120.0, over_limit expected 38.5, actual 40.0"),  # different values
        (files(("create_reimbursement_ticket", FILE_102), ("cancel_ticket", {"ticket_id": "R-40233", "reason": "x"})),
         "tickets ['R-40233']: unexpected updated (status='cancelled', note='x')"),
    ],
    ids=["less", "more", "different", "extra-update"],
)
def test_doing_less_more_or_otherwise_than_the_reference_fails_and_says_how(tmp_path: Path, agent: Agent,
                                                                            words: str) -> None:
    passed, reason = verdict(tmp_path, REFERENCE, agent)
    assert not passed and "difference(s) from the reference's final state" in reason
    assert words in reason, reason
    if words == "tickets ['R-":
        assert "expected inserted (" in reason and "did not happen" in reason
    if words.startswith("email_outbox"):
        assert "unexpected inserted" in reason


def test_ignored_columns_may_differ_and_others_may_not(tmp_path: Path) -> None:
    passed, reason = verdict(tmp_path, "expect_state: reference", LOOKS_FIRST)  # one more call: a later timestamp
    assert not passed and "created_at expected '2026-10-31T09:00:01', actual '2026-10-31T09:00:02'" in reason
    assert verdict(tmp_path, REFERENCE, LOOKS_FIRST)[0]
    noted = files(("create_reimbursement_ticket", {**FILE_102, "note": "airport run"}))
    passed, reason = verdict(tmp_path, REFERENCE, noted)
    assert not passed and "note expected None, actual 'airport run'" in reason
    assert verdict(tmp_path, "expect_state: {reference: true, ignore: {tickets: [note, created_at, updated_at]}}", noted)[0]


def test_an_update_is_compared_column_by_column(tmp_path: Path) -> None:
    head = HEAD.replace("tool: create_reimbursement_ticket, args: {invoice_id: INV-102, amount: 118.5, over_limit: 38.5}",
                        "tool: cancel_ticket, args: {ticket_id: R-40233, reason: personal meal}")
    same = files(("cancel_ticket", {"ticket_id": "R-40233", "reason": "personal meal"}))
    assert verdict(tmp_path, "expect_state: reference", same, head)[0]
    other = files(("cancel_ticket", {"ticket_id": "R-40233", "reason": "oops"}))
    passed, reason = verdict(tmp_path, "expect_state: reference", other, head)
    assert not passed and "tickets ['R-40233']: note expected 'personal meal', actual 'oops'" in reason


# --- rows form -----------------------------------------------------------------------------------------

ROWS = ("expect_state: {table: tickets, key: [invoice_id], absent: [{invoice_id: INV-104}], "
        "rows: [{invoice_id: INV-102, amount: 118.5, status: awaiting_manager_approval, project_code: null}]}")


def test_the_listed_rows_with_exactly_these_values_pass(tmp_path: Path) -> None:
    assert verdict(tmp_path, ROWS, EXACT) == (True, "tickets: 1 row(s) as expected, 1 absent")
    default_key = "expect_state: {table: tickets, rows: [{id: R-40233, status: cancelled, amount: 45}]}"
    assert verdict(tmp_path, default_key, files(("cancel_ticket", {"ticket_id": "R-40233", "reason": "x"})))[0]


@pytest.mark.parametrize(
    ("agent", "words"),
    [
        (files(), "tickets: no row with key invoice_id='INV-102'"),
        (files(("create_reimbursement_ticket", {**FILE_102, "amount": 120.0, "over_limit": 40.0})),
         "row invoice_id='INV-102': amount expected 118.5, actual 120.0"),
        (files(("create_reimbursement_ticket", {**FILE_102, "project_code": "P-77"})),
         "row invoice_id='INV-102': project_code expected None, actual 'P-77'"),
        (files(("create_reimbursement_ticket", FILE_102), ("create_reimbursement_ticket", FILE_102)),
         "2 rows with key invoice_id='INV-102', expected one"),
        (files(("create_reimbursement_ticket", FILE_102),
               ("create_reimbursement_ticket", {"invoice_id": "INV-104", "amount": 92.0, "over_limit": 12.0})),
         "1 row(s) with invoice_id='INV-104', expected none"),
    ],
    ids=["missing", "wrong-amount", "extra-column", "duplicate", "absent-exists"],
)
def test_a_missing_wrong_duplicate_or_forbidden_row_fails_and_says_which(tmp_path: Path, agent: Agent,
                                                                        words: str) -> None:
    passed, reason = verdict(tmp_path, ROWS, agent)
    assert not passed and words in reason, reason


# --- column-scoped unchanged_except -------------------------------------------------------------------

CANCEL = files(("cancel_ticket", {"ticket_id": "R-40233", "reason": "personal meal"}))


def test_a_column_scope_allows_only_its_columns(tmp_path: Path) -> None:
    scope = "unchanged_except: {rows: [{table: tickets, where: {id: R-40233}%s}]}"
    assert verdict(tmp_path, scope % "", CANCEL)[0]  # no columns: any change of the row, as before
    assert verdict(tmp_path, scope % ", columns: [status, note, updated_at]", CANCEL)[0]
    passed, reason = verdict(tmp_path, scope % ", columns: [status]", CANCEL)
    assert not passed and "tickets updated ['R-40233'] (status, note, updated_at)" in reason
    two = "unchanged_except: {rows: [{table: tickets, where: {id: R-40233}, columns: [status]}, " \
          "{table: tickets, where: {invoice_id: INV-113}, columns: [note, updated_at]}]}"
    assert verdict(tmp_path, two, CANCEL)[0]  # the columns of every scope matching the row count together


def test_inserting_or_deleting_a_row_is_outside_a_column_scope_but_tables_allow_anything(tmp_path: Path) -> None:
    # E-1001's tickets exist in the fixture (so the scope can permit updates) and the new ticket is one of them
    scope = "unchanged_except: {rows: [{table: tickets, where: {employee_id: E-1001}, columns: [status]}]}"
    passed, reason = verdict(tmp_path, scope, EXACT)
    assert not passed and "tickets inserted ['R-" in reason
    assert verdict(tmp_path, scope.replace("rows:", "tables: [tickets], rows:"), EXACT)[0]
    assert verdict(tmp_path, scope.replace(", columns: [status]", ""), EXACT)[0]


def test_a_column_scope_no_fixture_row_matches_is_refused_before_any_trial(tmp_path: Path) -> None:
    """It could only ever permit updates of rows that do not exist: a case that reads as allowing the new
    ticket and never does (cases/assertions/scope_checks.py)."""
    from passhat.cases.fault_checks import CannotFire

    scope = "unchanged_except: {rows: [{table: tickets, where: {invoice_id: INV-102}, columns: [status]}]}"
    with pytest.raises(CannotFire, match="no row of tickets in the fixture matches invoice_id='INV-102'"):
        verdict(tmp_path, scope, EXACT)
