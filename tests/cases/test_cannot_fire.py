"""A planned fault or row scope that no trial could exercise is bad input before any trial (issue 24).

Each of these used to load, lint clean and run, and the trajectory said the fault was injected: a case
that reads as tested when it was not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from passhat.cases import load_suite
from passhat.errors import CaseError
from passhat.lint import lint_suite
from tests.cases.notes_suite import GOOD, notes_suite

BUILTIN = Path(__file__).parents[2] / "src" / "passhat" / "domains"
MALFORMED = (BUILTIN / "refunds" / "cases" / "approval-malformed-4812.yaml").read_text()


def builtin_suite(tmp_path: Path, text: str) -> Path:
    """A folder holding one case of the built-in refunds domain (typed results: ``Approval``)."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "case.yaml").write_text(text)
    return folder


def refused(folder: Path) -> CaseError:
    with pytest.raises(CaseError) as info:
        load_suite(str(folder))
    assert info.value.file.endswith("case.yaml")
    return info.value


def test_a_misspelt_malformed_field_is_refused_naming_the_valid_fields(tmp_path: Path) -> None:
    folder = builtin_suite(tmp_path, MALFORMED.replace("field: amount, value", "field: ammount, value"))
    err = refused(folder)
    assert err.field == "faults.0.field"
    assert "get_approval's result (Approval) has no field 'ammount' (did you mean 'amount'?)" in err.message
    assert "its fields: amount, approved_at, approved_by, order_id, reason" in err.message
    lint = lint_suite(str(folder))
    assert [(f.code, f.field) for f in lint.errors] == [("cannot-fire", "faults.0.field")]


def test_the_builtin_malformed_cases_name_declared_fields(tmp_path: Path) -> None:
    """The built-in read tools declare their results, so the check runs on the shipped suites."""
    for name in ("refunds", "reimbursement"):
        suite = load_suite(name)
        faulted = [f for c in suite.cases for f in c.faults if f.kind == "malformed"]
        assert faulted
        for f in faulted:
            fields = suite.domains[name].tools[f.tool].result_fields
            assert fields is not None and f.field in fields


FAULT_CASES = [
    ("faults: [{tool: add_note, kind: timeout, field: title}]\n", "faults.0.field",
     "a timeout fault does not use `field` (it is for malformed)"),
    ("faults: [{tool: list_notes, kind: malformed, field: body, message: oops}]\n", "faults.0.message",
     "a malformed fault does not use `message`"),
    ("faults: [{tool: list_notes, kind: latency}]\n", "faults.0.seconds", "a latency fault of 0 seconds delays nothing"),
    ("faults: [{tool: wipe_audit, kind: error}]\nforbidden_tools: [wipe_audit]\n", "faults.0.tool",
     "wipe_audit is forbidden in this case, so every call of it is refused before a fault could act"),
    ("faults: [{tool: list_notes, kind: error}]\nallowed_tools: [add_note]\n", "faults.0.tool",
     "list_notes is not in allowed_tools"),
    ("faults: [{tool: add_note, kind: error, on_call: 40}]\n", "faults.0.on_call",
     "call 40 of add_note can never happen: the case allows at most 30 tool calls"),
    ("faults: [{tool: add_note, kind: error, on_call: 1, times: 3}, {tool: add_note, kind: timeout, on_call: 2}]\n",
     "faults.1", "every call it plans (call 2 of add_note) is already taken by faults.0"),
    ("faults: [{tool: add_note, kind: error, on_call: 1}, {tool: add_note, kind: timeout, on_call: 3},\n"
     "         {tool: add_note, kind: latency, seconds: 1, on_call: 1, times: 3}]\n",
     "faults.2", None),  # call 2 is its own: not shadowed
    ("faults: [{tool: wipe_audit, kind: malformed, field: status}]\n", "faults.0.field",
     "wipe_audit returns str, which has no fields to corrupt"),
]


@pytest.mark.parametrize(("extra", "field", "words"), FAULT_CASES)
def test_faults_that_cannot_fire_are_refused(tmp_path: Path, extra: str, field: str, words: str | None) -> None:
    folder = notes_suite(tmp_path, GOOD.replace("required_tools: [add_note]\n", "required_tools: [add_note]\n" + extra))
    if words is None:
        load_suite(str(folder))  # a partly overlapping fault still acts on a call of its own
        return
    err = refused(folder)
    assert (err.field, words in err.message) == (field, True), err.message
    assert any(f.code == "cannot-fire" and f.field == field for f in lint_suite(str(folder)).errors)


def test_a_fault_on_a_tool_the_domain_lacks_is_already_an_error(tmp_path: Path) -> None:
    folder = notes_suite(tmp_path, GOOD + "faults: [{tool: add_nte, kind: error}]\n")
    err = refused(folder)
    assert err.field == "faults.0.tool" and "unknown tool 'add_nte'" in err.message


def test_a_fault_on_a_tool_with_open_results_is_left_to_the_trial(tmp_path: Path) -> None:
    """``list_notes -> list[dict]`` could hold any name: the trial's own result decides (see test_boundary)."""
    folder = notes_suite(tmp_path, GOOD + "faults: [{tool: list_notes, kind: malformed, field: bodyy}]\n")
    assert [c.id for c in load_suite(str(folder)).cases] == ["add-note"]


SCOPES = [
    ("{table: notes, where: {owner: alice}, columns: []}", "rows.0.columns", "an empty `columns` list permits no change"),
    ("{table: notes, where: {priority: '2'}}", "rows.0.where.priority",
     "SQLite stores '2' in a column declared INTEGER as 2, and a scope compares values as stored"),
    ("{table: notes, where: {title: 7}}", "rows.0.where.title", "SQLite stores 7 in a column declared TEXT as '7'"),
    ("{table: notes, where: {owner: null}}", "rows.0.where.owner", "the column is NOT NULL"),
    ("{table: notes, where: {owner: zoe}, columns: [body]}", "rows.0",
     "no row of notes in the fixture matches owner='zoe', and a scope limited to `columns` permits only updates"),
]


@pytest.mark.parametrize(("scope", "field", "words"), SCOPES)
def test_row_scopes_that_name_no_rows_are_refused(tmp_path: Path, scope: str, field: str, words: str) -> None:
    text = GOOD.replace("unchanged_except: {tables: [notes]}", f"unchanged_except: {{rows: [{scope}]}}")
    folder = notes_suite(tmp_path, text)
    err = refused(folder)
    assert err.field == f"assertions.2.unchanged_except.{field}"
    assert words in err.message, err.message
    assert [f.code for f in lint_suite(str(folder)).errors] == ["cannot-fire"]


@pytest.mark.parametrize("scope", [
    "{table: notes, where: {title: call mom}}",  # no fixture row: it permits the row the agent inserts
    "{table: notes, where: {owner: alice}, columns: [title, body]}",  # fixture rows to update
    "{table: notes, where: {priority: 2.0}}",  # 2.0 is stored as 2 in an INTEGER column: the same number
    # another scope lets `owner` change, so a row can come to match owner=zoe by an update
    "{table: notes, where: {owner: zoe}, columns: [body]}, {table: notes, where: {owner: alice}, columns: [owner]}",
])
def test_row_scopes_that_can_match_load(tmp_path: Path, scope: str) -> None:
    text = GOOD.replace("unchanged_except: {tables: [notes]}", f"unchanged_except: {{rows: [{scope}]}}")
    assert len(load_suite(str(notes_suite(tmp_path, text))).cases) == 1


def test_one_scratch_database_stores_each_value_as_a_fresh_one_would() -> None:
    """The scope check stores every where value in one scratch database (a table per declared type, one row at a
    time): what it reads back must be what a database made for that value alone gives, whatever came before."""
    import itertools
    import sqlite3

    from passhat.cases.assertions.scope_checks import _safe_type, _Scratch

    def alone(value: object, declared: str) -> object:
        db = sqlite3.connect(":memory:")
        db.execute(f"CREATE TABLE t (v {_safe_type(declared)})")
        db.execute("INSERT INTO t VALUES (?)", (value,))
        (stored,) = db.execute("SELECT v FROM t").fetchone()
        db.close()
        return stored

    values = ["4812", 4812, "4812.0", 4812.5, "0x10", " 12", "1e3", True, "", "abc", 2**62, -0.0]
    types = ["INTEGER", "TEXT", "REAL", "NUMERIC", "", "VARCHAR(20)", "BLOB", "BOOLEAN"]
    pairs = list(itertools.product(values, types))
    with _Scratch() as scratch:
        for value, declared in pairs + pairs[::-1]:
            got, want = scratch.stored(value, declared), alone(value, declared)
            assert (type(got), got) == (type(want), want), (value, declared)
