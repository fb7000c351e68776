"""``reference:`` and ``expect_state`` are checked when the suite loads: errors name the file and the field,
and the reference runs once per case, not once per trial."""

from __future__ import annotations

import asyncio
import weakref
from pathlib import Path
from typing import Any

import pytest

import passhat.cases.expected as expected_module
from passhat.cases import load_suite
from passhat.cases.expected import expected_state
from passhat.cases.model import Case
from passhat.errors import CaseError
from passhat.runner import run_trial

BASE = """\
id: file-102
domain: reimbursement
instruction: File my taxi invoice INV-102.
user: {identity: E-1001}
allowed_tools: [query_invoices, search_policy, query_tickets, create_reimbursement_ticket]
reference:
  - {tool: query_invoices, args: {invoice_id: INV-102}}
  - {tool: create_reimbursement_ticket, args: {invoice_id: INV-102, amount: 118.5, over_limit: 38.5}}
assertions:
  - expect_state: reference
"""
CREATE = "{tool: create_reimbursement_ticket, args: {invoice_id: INV-102, amount: 118.5, over_limit: 38.5}}"


def load(tmp_path: Path, text: str) -> Any:
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    (folder / "case.yaml").write_text(text)
    return load_suite(str(folder))


def with_assertion(assertion: str) -> str:
    return BASE.replace("  - expect_state: reference\n", f"  - {assertion}\n")


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        (BASE.replace("tool: query_invoices", "tool: query_everything"), "reference.0.tool", "unknown tool 'query_everything'"),
        (BASE.replace("amount: 118.5,", "amount: lots,"), "reference.1.args", "takes: invoice_id, amount, over_limit"),
        (BASE.replace("over_limit: 38.5}", "over_limit: 38.5, colour: red}"), "reference.1.args", "colour"),
        (BASE.replace("invoice_id: INV-102, amount", "invoice_id: INV-999, amount"), "reference.1",
         "failed on fixture 'default' as E-1001 (tool_error)"),
        (BASE.replace("{invoice_id: INV-102}}", "{invoice_id: INV-205}}"), "reference.0", "(denied)"),
        (BASE.replace(CREATE, "{tool: cancel_ticket, args: {ticket_id: R-40233, reason: x}}"), "reference.1.tool",
         "not allowed in this task; a reference may call only tools the case allows"),
        (BASE.split("reference:")[0] + "assertions:\n  - expect_state: reference\n", "assertions.0.expect_state",
         "needs the case's `reference:` calls"),
        (with_assertion("expect_state: exact"), "assertions.0.expect_state.reference", "the only word form"),
        (with_assertion("expect_state: {reference: true, table: tickets, rows: [{id: R-1}]}"),
         "assertions.0.expect_state", "two forms"),
        (with_assertion("expect_state: {table: tickets}"), "assertions.0.expect_state", "at least one row"),
        (with_assertion("expect_state: {rows: [{id: R-1}]}"), "assertions.0.expect_state", "needs `table`"),
        (with_assertion("expect_state: {table: tickets, rows: [{id: R-1}], ignore: {tickets: [note]}}"),
         "assertions.0.expect_state", "`ignore` belongs to the reference form"),
        (with_assertion("expect_state: {table: tikets, rows: [{id: R-1}]}"), "assertions.0.expect_state.table",
         "unknown table 'tikets'"),
        (with_assertion("expect_state: {table: tickets, rows: [{status: cancelled}]}"), "assertions.0.expect_state.rows.0",
         "lacks key column(s) id"),
        (with_assertion("expect_state: {table: tickets, rows: [{id: R-40233, colour: red}]}"),
         "assertions.0.expect_state.rows.0", "unknown column 'colour' in tickets"),
        (with_assertion("expect_state: {table: tickets, key: [number], rows: [{number: 1}]}"),
         "assertions.0.expect_state.key", "unknown column 'number'"),
        (with_assertion("expect_state: {table: tickets, absent: [{}]}"), "assertions.0.expect_state.absent.0",
         "at least one column"),
        (with_assertion("expect_state: {reference: true, ignore: {tickets: [colour]}}"),
         "assertions.0.expect_state.ignore.tickets", "unknown column 'colour'"),
        (with_assertion("unchanged_except: {rows: [{table: tickets, where: {id: R-40233}, columns: [colour]}]}"),
         "assertions.0.unchanged_except.rows.0.columns", "unknown column 'colour'"),
    ],
)
def test_bad_reference_or_expected_state_names_file_and_field(tmp_path: Path, text: str, field: str, words: str) -> None:
    with pytest.raises(CaseError) as info:
        load(tmp_path, text)
    assert info.value.file.endswith("case.yaml")
    assert info.value.field == field, str(info.value)
    assert words in str(info.value)


def test_a_table_without_primary_key_needs_a_key(tmp_path: Path) -> None:
    (tmp_path / "domain.py").write_text(
        "from passhat.domain import Domain\n"
        "domain = Domain('log', schema='CREATE TABLE events (name TEXT, at TEXT);', fixtures={'default': lambda db: None},"
        " policy='', tools=[])\n")
    case = "id: c\ndomain: ../domain.py\ninstruction: hi\nassertions:\n  - expect_state: {table: events, rows: [{name: x}]}\n"
    with pytest.raises(CaseError) as info:
        load(tmp_path, case)
    assert info.value.field == "assertions.0.expect_state.key" and "events has no primary key" in info.value.message
    (tmp_path / "cases" / "case.yaml").write_text(case.replace("rows: [{name: x}]", "key: [name], rows: [{name: x}]"))
    assert load_suite(str(tmp_path / "cases")).cases[0].id == "c"


def test_the_shorthand_and_the_long_form_are_the_same_case(tmp_path: Path) -> None:
    short = load(tmp_path, BASE).cases[0]
    (tmp_path / "cases" / "case.yaml").write_text(with_assertion("expect_state: {reference: true}"))
    assert load_suite(str(tmp_path / "cases")).cases[0] == short
    assert short.assertions[0].reference is True  # type: ignore[union-attr]


def test_the_reference_is_part_of_the_case_hash_and_cases_without_one_hash_as_before(tmp_path: Path) -> None:
    case = load(tmp_path, BASE).cases[0]
    assert case.model_copy(update={"reference": case.reference[:1]}).content_hash() != case.content_hash()
    scoped = {"id": "x", "domain": "d", "instruction": "i",
              "assertions": [{"unchanged_except": {"rows": [{"table": "t", "where": {"k": 1}}]}}]}
    # the hash this case had before `reference` and `columns` existed (computed at commit a2bb8d0)
    assert Case.model_validate(scoped).content_hash() == "a5db33fb159f7720aa1f0364f9ecc544329d899adea945f149b53c62886c5688"
    scoped["assertions"][0]["unchanged_except"]["rows"][0]["columns"] = ["a"]  # type: ignore[index]
    assert Case.model_validate(scoped).content_hash() != "a5db33fb159f7720aa1f0364f9ecc544329d899adea945f149b53c62886c5688"


def test_the_reference_runs_once_per_case_not_once_per_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []
    original = expected_module._run_reference

    async def counted(case: Case, domain: Any) -> Any:
        runs.append(case.id)
        return await original(case, domain)

    monkeypatch.setattr(expected_module, "_run_reference", counted)
    monkeypatch.setattr(expected_module, "_cache", weakref.WeakKeyDictionary())  # built-in domains are shared
    suite = load(tmp_path, BASE)
    assert runs == ["file-102"]
    case = suite.cases[0]
    domain = suite.domain_of(case)
    diff = expected_state(case, domain)
    assert diff is expected_state(case, domain)
    assert [(c.table, c.kind, c.after["amount"]) for c in diff.rows()] == [("tickets", "inserted", 118.5)]  # type: ignore[index, union-attr]

    async def idle(episode: Any) -> str:
        return "nothing"

    async def trials() -> list[Any]:  # inside a running loop, as in a run
        return [await run_trial(case, domain, idle, t, seed=t) for t in range(3)]

    records = asyncio.run(trials())
    assert runs == ["file-102"]
    assert all(r.outcome == "fail" for r in records)

    async def inside_a_loop() -> Any:  # evaluate_async loads suites with a loop running: no nested asyncio.run
        return expected_state(case, domain)

    expected_module._cache.clear()
    assert asyncio.run(inside_a_loop()).to_json() == diff.to_json()  # type: ignore[union-attr]
    assert runs == ["file-102", "file-102"]


def test_lint_reports_a_failing_reference(tmp_path: Path) -> None:
    from passhat.lint import lint_suite

    load(tmp_path, BASE)
    (tmp_path / "cases" / "case.yaml").write_text(BASE.replace("amount: 118.5,", "amount: -1,"))
    [finding] = [f for f in lint_suite(str(tmp_path / "cases")).findings if f.severity == "error"]
    assert (finding.code, finding.field) == ("bad-reference", "reference.1")
    assert "amount must be positive" in finding.message


def test_cases_expected_prints_the_reference_row_changes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from passhat.cli import main

    runner = CliRunner()
    shown = runner.invoke(main, ["cases", "expected", "reimbursement", "inv-102"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0] == "inv-102: 2 reference call(s) on fixture 'default' as E-1001"
    assert lines[1] == "tickets (1 change(s))"
    assert "inserted ['R-" in lines[2] and "invoice_id='INV-102', amount=118.5, over_limit=38.5" in lines[2]
    as_json = runner.invoke(main, ["cases", "expected", "reimbursement", "inv-102", "--json"])
    assert as_json.exit_code == 0 and '"kind": "inserted"' in as_json.output
    load(tmp_path, BASE.replace(CREATE, "{tool: cancel_ticket, args: {ticket_id: R-40233, reason: personal}}")
         .replace("allowed_tools: [", "allowed_tools: [cancel_ticket, "))
    update = runner.invoke(main, ["cases", "expected", str(tmp_path / "cases"), "file-102"])
    assert "updated ['R-40233']: status 'awaiting_finance_review' → 'cancelled', note None → 'personal'" in update.output
    missing = runner.invoke(main, ["cases", "expected", "reimbursement", "inv-104-en"])
    assert missing.exit_code == 2 and "inv-104-en.yaml: reference: case 'inv-104-en' has no reference solution" in missing.output
    unknown = runner.invoke(main, ["cases", "expected", "reimbursement", "inv-10"])
    assert unknown.exit_code == 2 and "did you mean 'inv-102'?" in unknown.output
