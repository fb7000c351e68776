"""Checks of a case's assertions against its fixture, before any trial: tables and columns exist, SQL is
read-only and finishes within its budget, regular expressions compile, ``expect_state`` names a key, an
``unchanged_except`` row scope can match a row (``cases/scope_checks.py``).
Errors name the file and the field (``assertions.2.row_count.table``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from passhat.cases.assertions import WORKSPACE_ASSERTIONS, CustomAssertion, ExpectState
from passhat.cases.scope_checks import check_scopes
from passhat.errors import CaseError
from passhat.world.kind import StateReader
from passhat.world.query import QueryBudgetExceeded


def check_regex(pattern: str | None, file: str, field: str) -> None:
    if pattern is None:
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        raise CaseError(file, field, f"invalid regular expression: {exc}") from None


def _check_sql(sql: str, file: str, field: str, reader: StateReader | None) -> None:
    """Read-only, compiles against the fixture, and finishes on it within the query budget.

    A query that runs away on the initial state (a ``WITH RECURSIVE`` that never stops) would hang or
    fail every trial; it is the case's bug, so it is bad input now rather than a failed grade later.
    """
    if not re.match(r"\s*(select|with)\b", sql, re.IGNORECASE):
        raise CaseError(file, field, "must be a read-only query starting with SELECT or WITH")
    if reader is None:
        raise CaseError(file, field, "SQL needs a fixture with a database, and the case's fixture has none")
    problem = reader.compile_error(sql)
    if problem is not None:
        raise CaseError(file, field, f"SQL does not compile against the fixture: {problem}")
    try:
        reader.query(sql)
    except QueryBudgetExceeded as exc:
        raise CaseError(file, field, f"on the fixture, the {exc}") from None
    except Exception:  # noqa: BLE001 - the database's own error: compiles but fails on the fixture's rows
        pass  # graded (and failed closed) on the final state


class _Names:
    """Table and column names an assertion uses, checked against the fixture's tables (errors name the field)."""

    def __init__(self, file: str, tables: Mapping[str, Any]) -> None:
        self.file, self.tables = file, tables

    def table(self, name: str, where: str) -> Any:
        if name not in self.tables:
            raise CaseError(self.file, where, f"unknown table {name!r}; tables: {', '.join(sorted(self.tables))}")
        return self.tables[name]

    def columns(self, t: Any, names: Any, where: str) -> None:
        for col in names:
            if col not in t.columns:
                raise CaseError(self.file, where, f"unknown column {col!r} in {t.name}; columns: {', '.join(t.columns)}")


def check_assertion(a: Any, field: str, file: str, tables: Mapping[str, Any], reader: StateReader | None) -> None:
    if isinstance(a, CustomAssertion):
        return  # its fields are the grader's parameters, checked by check_params (a `table` may be anything)
    names = _Names(file, tables)
    table, columns = names.table, names.columns
    if hasattr(a, "table") and a.kind != "expect_state":  # expect_state's table is optional (its own check)
        t = table(a.table, f"{field}.table")
        columns(t, getattr(a, "where", {}), f"{field}.where")
        for attr in ("field", "column"):
            if hasattr(a, attr):
                columns(t, [getattr(a, attr)], f"{field}.{attr}")
    for attr in ("equals",):
        sql = getattr(getattr(a, attr, None), "sql", None)
        if sql:
            _check_sql(sql, file, f"{field}.{attr}.sql", reader)
    if a.kind == "sql":
        _check_sql(a.query, file, f"{field}.query", reader)
    if a.kind == "reply_matches":
        check_regex(a.pattern, file, f"{field}.pattern")
    if a.kind == "unchanged_except":
        for j, name in enumerate(a.tables):
            table(name, f"{field}.tables.{j}")
        for j, scope in enumerate(a.rows):
            t = table(scope.table, f"{field}.rows.{j}.table")
            columns(t, scope.where, f"{field}.rows.{j}.where")
            columns(t, scope.columns or [], f"{field}.rows.{j}.columns")
        if reader is not None:
            check_scopes(a, field, file, reader)
    if a.kind == "expect_state":
        _check_expect_state(a, field, file, tables)


def check_workspace(a: Any, field: str, file: str, has_workspace: bool) -> None:
    """File assertions need a fixture with a workspace; their paths stay inside it."""
    kind = getattr(a, "kind", None)
    if kind in WORKSPACE_ASSERTIONS and not has_workspace:
        raise CaseError(file, field, f"{kind} checks a workspace, and the case's fixture has none "
                                     "(declare one with Domain(workspace=...), docs/workspace.md)")
    if kind == "unchanged_except" and a.files and not has_workspace:
        raise CaseError(file, f"{field}.files", "`files` needs a fixture with a workspace (Domain(workspace=...))")
    path = getattr(a, "path", None) if kind in WORKSPACE_ASSERTIONS else None
    if isinstance(path, str) and (path.startswith("/") or ".." in path.split("/") or "\0" in path):
        raise CaseError(file, f"{field}.path", f"{path!r} is not a path inside the workspace (relative, no `..`)")


def _check_expect_state(a: ExpectState, field: str, file: str, tables: Mapping[str, Any]) -> None:
    names = _Names(file, tables)
    known, columns = names.table, names.columns

    for name, cols in a.ignore.items():
        columns(known(name, f"{field}.ignore.{name}"), cols, f"{field}.ignore.{name}")
    if a.table is None:
        return
    t = known(a.table, f"{field}.table")
    if a.key is None and t.key == ("rowid",):
        raise CaseError(file, f"{field}.key", f"table {t.name} has no primary key: say which columns find a row, "
                                              f"e.g. key: [{t.columns[0]}] (columns: {', '.join(t.columns)})")
    key = a.key if a.key is not None else list(t.key)
    columns(t, key, f"{field}.key")
    if not key:
        raise CaseError(file, f"{field}.key", f"name at least one column of {t.name} ({', '.join(t.columns)})")
    for j, row in enumerate(a.rows):
        columns(t, row, f"{field}.rows.{j}")
        missing = [k for k in key if k not in row]
        if missing:
            raise CaseError(file, f"{field}.rows.{j}", f"the row lacks key column(s) {', '.join(missing)} "
                                                       f"(key: {', '.join(key)}); every row names its key")
    for j, row in enumerate(a.absent):
        if not row:
            raise CaseError(file, f"{field}.absent.{j}", "an absent row names at least one column (e.g. its key), "
                                                         "or it would match every row")
        columns(t, row, f"{field}.absent.{j}")
