"""A built-in assertion kind is one class, and adding one touches its family's module only (docs/design/031).

Registration is static (each family module's ``KINDS``; ``registry.FAMILIES``), so a test cannot add a kind
through it. Instead: every registered kind declares all it must (check, subject, label, documentation), every
kind defined in the package is registered, what lists kinds is derived from the classes, nothing outside the
package lists them by name, and a kind defined here, with no edit elsewhere, is graded, labelled and checked
against a fixture through its class alone.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sqlite3
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

import pytest

import passhat.cases.assertions as package
from passhat.cases import Case
from passhat.cases.assertions import (
    ASSERTION_KINDS,
    BUILTIN_ASSERTIONS,
    SHORTHAND_FIELD,
    WORKSPACE_ASSERTIONS,
    BuiltinAssertion,
    GradedSubject,
)
from passhat.cases.assertions.fixture import Fixture
from passhat.cases.assertions.registry import FAMILIES
from passhat.episode import Usage
from passhat.errors import CaseError
from passhat.graders.base import TrialView
from passhat.graders.state import grade_state
from passhat.world.diff import Diff
from passhat.world.image import read_tables

SRC = Path(package.__file__).parents[2]
"""src/passhat"""


@pytest.mark.parametrize("name", list(ASSERTION_KINDS))
def test_each_kind_declares_its_grader_check_label_and_documentation(name: str) -> None:
    kind = ASSERTION_KINDS[name]
    assert not inspect.isabstract(kind), f"{name} has no check of its own"
    assert kind.subject in get_args(GradedSubject)
    assert get_args(kind.model_fields["kind"].annotation) == (name,) and kind.kind_name() == name
    assert "__doc__" in vars(kind) and kind.__doc__, f"{name} needs a docstring: it is its entry in docs/case-file.md"
    undocumented = [f for f, info in kind.model_fields.items() if f != "kind" and not info.description]
    assert not undocumented, f"{name}: fields without a docstring (the reference's meaning column): {undocumented}"
    assert kind.shorthand is None or kind.shorthand in kind.model_fields
    assert isinstance(kind.needs_workspace, bool) and isinstance(kind.bounds_scope, bool)


def test_every_kind_defined_in_the_package_is_registered_by_its_family() -> None:
    """Forgetting a kind in its family's ``KINDS``, or a family in ``FAMILIES``, would leave a kind that case
    files cannot name: this is the one place besides the class that an added kind must appear."""
    defined: list[type[BuiltinAssertion]] = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        kinds = [c for c in vars(module).values() if inspect.isclass(c) and issubclass(c, BuiltinAssertion)
                 and c.__module__ == module.__name__ and not inspect.isabstract(c)]
        if kinds:
            assert module in FAMILIES, f"{module.__name__} defines kinds: add it to registry.FAMILIES"
            assert list(module.KINDS) == [k for k in module.KINDS if k in kinds] and set(module.KINDS) == set(kinds), \
                f"{module.__name__}.KINDS must list every kind the module defines"
        defined += kinds
    assert set(defined) == set(BUILTIN_ASSERTIONS) and len(ASSERTION_KINDS) == len(BUILTIN_ASSERTIONS) == len(defined)


def test_what_lists_kinds_is_derived_from_the_classes_and_unchanged() -> None:
    """The order is the documented one (docs/case-file.md, the list in error messages)."""
    assert list(ASSERTION_KINDS) == [
        "row_count", "field_equals", "sql", "net_change", "unchanged_except", "expect_state", "reply_contains",
        "reply_not_contains", "reply_matches", "reply_mentions", "command_succeeds", "file_unchanged", "file_exists",
        "file_absent", "file_matches"]
    assert SHORTHAND_FIELD == {"reply_contains": "text", "reply_not_contains": "text", "reply_matches": "pattern",
                               "expect_state": "reference", "command_succeeds": "run", "file_unchanged": "paths",
                               "file_exists": "path", "file_absent": "path"}
    assert WORKSPACE_ASSERTIONS == {"command_succeeds", "file_unchanged", "file_exists", "file_absent", "file_matches"}


NAMED_ELSEWHERE = {
    "cases/model.py": "content_hash leaves out fields added to three kinds after cases were hashed (frozen history)",
    "lint/loading.py": "`sql` there is the field of an `{sql: ...}` value, not the kind",
    "scaffold/from_mcp.py": "writes starter case files (and `sql` names a tool parameter)",
    "shadow/promote.py": "writes case files",
    "tau_bench/importer.py": "writes case files",
    "tau2_bench/importer.py": "writes case files",
}
"""Modules outside cases/assertions/ that spell a kind's name, and why that is not a list of kinds to keep."""
KIND_CLASSES_ELSEWHERE = {
    "cases/load.py": {"ExpectState"},  # `expect_state: reference` needs the case's reference calls
    "graders/files.py": {"CommandSucceeds"},  # runs the commands before grading (a process per command)
    "attribution_rows.py": {"UnchangedExcept"},  # the first call that wrote outside the scope
}
"""Modules outside the package that use one kind's own data, and what for."""


def test_nothing_outside_the_package_lists_kinds_by_name() -> None:
    kind_classes = {k.__name__ for k in BUILTIN_ASSERTIONS}
    names, classes = set(), {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("cases/assertions/") or "/workspaces/" in rel:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and node.value in ASSERTION_KINDS:
                names.add(rel)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("passhat.cases.assertions"):
                used = {a.name for a in node.names} & kind_classes
                if used:
                    classes.setdefault(rel, set()).update(used)
    assert names == set(NAMED_ELSEWHERE), "a module outside cases/assertions/ spells a kind's name: derive it from the " \
                                          "registry (ASSERTION_KINDS) or a ClassVar of the kinds instead"
    assert classes == KIND_CLASSES_ELSEWHERE


class RowsAtMost(BuiltinAssertion):
    """At most ``most`` rows in ``table`` (a kind this test defines, registered nowhere)."""

    subject: ClassVar[GradedSubject] = "state"

    kind: Literal["rows_at_most"] = "rows_at_most"
    table: str
    """Table to check."""
    most: int
    """The most rows allowed."""

    def label_target(self) -> str:
        return self.table

    def check(self, view: TrialView) -> tuple[bool, str]:
        n = view.query(f'SELECT COUNT(*) FROM "{self.table}"', ())[0][0]
        return n <= self.most, f"{self.table}: {n} row(s), at most {self.most}"


def test_a_kind_is_graded_labelled_and_checked_through_its_class_alone() -> None:
    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE tickets (id TEXT PRIMARY KEY); INSERT INTO tickets VALUES ('T-1'), ('T-2');")
    base = Case.model_validate({"id": "c", "domain": "d", "instruction": "i", "assertions": []})
    case = base.model_copy(update={"assertions": [RowsAtMost(table="tickets", most=1),
                                                  RowsAtMost(table="tickets", most=2, description="two at most")]})

    def query(sql: str, params: Any) -> list[tuple[Any, ...]]:
        return conn.execute(sql, params).fetchall()

    view = TrialView(case=case, calls=[], messages=[], diff=Diff(), end_reason="completed", usage=Usage(),
                     agent_seconds=0.0, query=query)
    grades = [(g.grader, g.name, g.passed, g.reason) for g in grade_state(view)]
    assert grades == [("state", "rows_at_most(tickets)", False, "tickets: 2 row(s), at most 1"),
                      ("state", "rows_at_most: two at most", True, "tickets: 2 row(s), at most 2")]
    fixture = Fixture("cases/c.yaml", read_tables(conn), None)
    case.assertions[0].check_fixture("assertions.0.rows_at_most", fixture)  # the default: `table` exists
    with pytest.raises(CaseError, match=r"cases/c.yaml: assertions.0.rows_at_most.table: unknown table 'ticket'"):
        RowsAtMost(table="ticket", most=1).check_fixture("assertions.0.rows_at_most", fixture)


@pytest.mark.parametrize(("assertion", "name"), [
    ({"row_count": {"table": "tickets", "where": {"invoice_id": "INV-102", "open": None}, "equals": 1}},
     "row_count(tickets where invoice_id='INV-102' and open=None)"),
    ({"field_equals": {"table": "refunds", "where": {"order_id": 4812}, "field": "amount", "equals": {"sql": "SELECT 1"}}},
     "field_equals(refunds where order_id=4812)"),
    ({"sql": {"query": "SELECT 1", "expect": 1}}, "sql()"),
    ({"net_change": {"table": "ledger", "column": "amount", "equals": 0}}, "net_change(ledger)"),
    ({"unchanged_except": {"tables": ["refunds"]}}, "unchanged_except()"),
    ({"expect_state": "reference"}, "expect_state(reference)"),
    ({"expect_state": {"table": "orders", "rows": [{"id": 1}]}}, "expect_state(orders)"),
    ({"reply_contains": "38.5"}, "reply_contains(38.5)"),
    ({"reply_not_contains": {"text": "error", "normalize": "numbers"}}, "reply_not_contains(error)"),
    ({"reply_matches": "R-\\d+"}, "reply_matches(R-\\d+)"),
    ({"reply_mentions": {"table": "tickets", "column": "id", "where": {"invoice_id": "INV-1"}}},
     "reply_mentions(tickets where invoice_id='INV-1')"),
    ({"command_succeeds": "pytest -q"}, "command_succeeds()"),
    ({"file_unchanged": ["tests"]}, "file_unchanged()"),
    ({"file_exists": "src/a.py"}, "file_exists()"),
    ({"file_absent": "tmp"}, "file_absent()"),
    ({"file_matches": {"path": "a.py", "pattern": "^def f"}}, "file_matches(^def f)"),
    ({"row_count": {"table": "tickets", "equals": 1, "description": "one ticket"}}, "row_count: one ticket"),
    ({"refund_matches_approval": {"order_id": "O-1", "table": "x"}}, "refund_matches_approval(order_id='O-1', table='x')"),
    ("no_double_refund", "no_double_refund()"),
])
def test_grade_names_are_the_ones_records_hold(assertion: Any, name: str) -> None:
    """A grade's name is how a re-grade and a comparison find it again: these are the names passhat has always
    given (before kinds carried their labels), so stored runs keep matching."""
    (a,) = Case.model_validate({"id": "c", "domain": "d", "instruction": "i", "assertions": [assertion]}).assertions
    assert a.label() == name
