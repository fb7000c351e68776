"""A case's fixture as its assertions are checked against it when the suite loads, before any trial.

Each kind checks what it names (``BuiltinAssertion.check_fixture``) through :class:`Fixture`: tables and
columns exist, SQL is read-only and finishes on the fixture within its budget, regular expressions
compile. Errors name the file and the field (``assertions.2.row_count.table``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from passhat.errors import CaseError
from passhat.world.image import TableInfo
from passhat.world.kind import StateReader
from passhat.world.query import QueryBudgetExceeded


def check_regex(pattern: str | None, file: str, field: str) -> None:
    """``pattern`` compiles as a Python regular expression (``None``: nothing to check)."""
    if pattern is None:
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        raise CaseError(file, field, f"invalid regular expression: {exc}") from None


@dataclass(frozen=True)
class Fixture:
    """The fixture's tables and a read-only reader of its state (``None`` when it has no database)."""

    file: str
    """The case file, named in every error."""
    tables: Mapping[str, TableInfo]
    reader: StateReader | None

    def table(self, name: str, field: str) -> TableInfo:
        """The table called ``name``; an unknown one lists the tables there are."""
        if name not in self.tables:
            raise CaseError(self.file, field, f"unknown table {name!r}; tables: {', '.join(sorted(self.tables))}")
        return self.tables[name]

    def columns(self, table: TableInfo, names: Iterable[str], field: str) -> None:
        """Every name is a column of ``table``; an unknown one lists its columns."""
        for col in names:
            if col not in table.columns:
                raise CaseError(self.file, field, f"unknown column {col!r} in {table.name}; columns: "
                                                  f"{', '.join(table.columns)}")

    def regex(self, pattern: str | None, field: str) -> None:
        check_regex(pattern, self.file, field)

    def sql(self, sql: str, field: str) -> None:
        """Read-only, compiles against the fixture, and finishes on it within the query budget.

        A query that runs away on the initial state (a ``WITH RECURSIVE`` that never stops) would hang or
        fail every trial; it is the case's bug, so it is bad input now rather than a failed grade later.
        """
        if not re.match(r"\s*(select|with)\b", sql, re.IGNORECASE):
            raise CaseError(self.file, field, "must be a read-only query starting with SELECT or WITH")
        if self.reader is None:
            raise CaseError(self.file, field, "SQL needs a fixture with a database, and the case's fixture has none")
        problem = self.reader.compile_error(sql)
        if problem is not None:
            raise CaseError(self.file, field, f"SQL does not compile against the fixture: {problem}")
        try:
            self.reader.query(sql)
        except QueryBudgetExceeded as exc:
            raise CaseError(self.file, field, f"on the fixture, the {exc}") from None
        except Exception:  # noqa: BLE001 - the database's own error: compiles but fails on the fixture's rows
            pass  # graded (and failed closed) on the final state
