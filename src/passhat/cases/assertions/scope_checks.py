"""``unchanged_except`` row scopes that name no rows, found before any trial.

A row scope permits changes to the rows its ``where`` matches. One that can match no row permits
nothing, so a correct agent fails the check and the case reads as if it allowed what it meant to allow.
What is knowable from the case and the fixture:

- ``columns: []`` permits no change at all;
- a ``where`` value no row can hold: SQLite stores ``"4812"`` in an INTEGER column as the number 4812,
  and ``4812`` in a TEXT column as the text ``"4812"``; scopes compare values as stored (text is never a
  number), so such a scope matches nothing, ever; ``null`` in a NOT NULL column likewise;
- a scope limited to ``columns`` permits only updates of rows that exist before the trial: when no
  fixture row matches its ``where``, and no scope's ``columns`` let a ``where`` column change, no row
  can come to match it either.

The second check needs SQLite's storage rules, so it runs on SQLite fixtures (in memory or a file); on
other kinds (PostgreSQL refuses such a value outright) the first and third still run.

A scope *without* ``columns`` whose ``where`` matches no fixture row is fine: it permits the rows the
agent inserts (``refunds where order_id=4812`` in a refund case). That is its usual purpose.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from passhat.cases.fault_checks import CannotFire
from passhat.world.diff import same_value
from passhat.world.kind import StateReader

if TYPE_CHECKING:  # the assertion calls these checks when the suite loads
    from passhat.cases.assertions.scope import RowScope, UnchangedExcept


def check_scopes(a: UnchangedExcept, field: str, file: str, reader: StateReader) -> None:
    """Raise :class:`CannotFire` for the first row scope of ``a`` that names no rows (see the module doc)."""
    with _Scratch() as scratch:
        for j, scope in enumerate(a.rows):
            at = f"{field}.rows.{j}"
            if scope.columns == []:
                raise CannotFire(file, f"{at}.columns", "an empty `columns` list permits no change at all: name the "
                                                        "columns that may change, or leave `columns` out to allow any "
                                                        "change of the matching rows")
            declared = _declared(reader, scope.table)
            for column, value in scope.where.items():
                why = _never_stored(scratch, value, *declared[column]) if column in declared else None
                if why is not None:
                    raise CannotFire(file, f"{at}.where.{column}", f"no row can match: {why}")
            if scope.columns is not None and not _fixture_matches(reader, scope):
                movable = {c for s in a.rows if s.table == scope.table for c in s.columns or []}
                if not movable & set(scope.where):
                    raise CannotFire(file, at, f"no row of {scope.table} in the fixture matches {_where(scope)}, and a "
                                               "scope limited to `columns` permits only updates of existing rows (none "
                                               "of its `where` columns may change, so no row can come to match): to "
                                               "allow rows the agent inserts, leave `columns` out")


def _declared(reader: StateReader, table: str) -> dict[str, tuple[str, bool]]:
    """Column → (declared type, NOT NULL) from a SQLite fixture's schema; empty for other kinds."""
    conn = getattr(reader, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return {}
    rows = conn.execute(f'PRAGMA table_info("{table.replace(chr(34), chr(34) * 2)}")').fetchall()
    # an INTEGER PRIMARY KEY is the rowid: never null, whatever the declaration says
    return {r[1]: (r[2] or "", bool(r[3]) or (r[5] > 0 and (r[2] or "").upper() == "INTEGER")) for r in rows}


class _Scratch:
    """Values stored as SQLite stores them in a column of a declared type, and read back: one in-memory database
    for a check, with a table per declared type holding one row at a time (a database and a table per value
    was ~0.1 ms each, 82 of them when the refunds suite loads)."""

    def __init__(self) -> None:
        self._db: sqlite3.Connection | None = None
        self._tables: dict[str, str] = {}

    def __enter__(self) -> _Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._db is not None:
            self._db.close()

    def stored(self, value: Any, declared_type: str) -> Any:
        if self._db is None:
            self._db = sqlite3.connect(":memory:")
        table = self._tables.get(declared_type)
        if table is None:
            table = self._tables[declared_type] = f"t{len(self._tables)}"
            self._db.execute(f"CREATE TABLE {table} (v {_safe_type(declared_type)})")
        self._db.execute(f"DELETE FROM {table}")
        self._db.execute(f"INSERT INTO {table} VALUES (?)", (value,))
        (stored,) = self._db.execute(f"SELECT v FROM {table}").fetchone()
        return stored


def _never_stored(scratch: _Scratch, value: Any, declared_type: str, not_null: bool) -> str | None:
    """Why no row can hold ``value`` in a column of this type, or ``None`` when one can.

    Exact rather than a re-implementation of SQLite's type affinity: the value is stored in a scratch
    column of the same declared type and read back."""
    if value is None:
        return "the column is NOT NULL, so no row holds null there" if not_null else None
    stored = scratch.stored(value, declared_type)
    if same_value(stored, value):
        return None
    column = f"a column declared {declared_type}" if declared_type else "an untyped column"
    hint = f"; write {stored!r} instead" if isinstance(stored, int | float | str) else ""
    return (f"SQLite stores {value!r} in {column} as {stored!r}, and a scope compares values as stored "
            f"(text never equals a number){hint}")


def _safe_type(declared: str) -> str:
    """The declared type, reduced to words SQLite parses as a type name (affinity comes from these words)."""
    return "".join(ch for ch in declared if ch.isalnum() or ch in " _") or ""


def _fixture_matches(reader: StateReader, scope: RowScope) -> bool:
    """Whether a row of the fixture matches the scope's ``where`` as the grader compares (``same_value``)."""
    table = scope.table.replace('"', '""')
    if not scope.where:
        return bool(reader.query(f'SELECT 1 FROM "{table}" LIMIT 1'))
    cols = list(scope.where)
    select = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
    for row in reader.query(f'SELECT {select} FROM "{table}"'):
        if all(same_value(v, scope.where[c]) for c, v in zip(cols, row, strict=True)):
            return True
    return False


def _where(scope: RowScope) -> str:
    return " and ".join(f"{k}={v!r}" for k, v in scope.where.items()) or "(any row: the table is empty)"


__all__ = ["check_scopes"]
