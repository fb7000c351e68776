"""The ``sqlite`` world kind: a fixture built once into an in-memory SQLite image (``world/image.py``),
a pooled private copy per trial inside a savepoint, and a diff read from the change-log triggers.

This is the default kind (a fixture given as YAML or a loader function) and the fastest: reset is a
savepoint rollback, the diff costs O(rows changed), and nothing here leaves the event loop's thread.
No other process can open an in-memory database, so :meth:`SqliteCopy.reach` is empty.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from passhat.world.diff import Diff, RowChange, same_row
from passhat.world.image import LOG_TABLE, FixtureImage, TableInfo, _quote
from passhat.world.kind import Facet, Params
from passhat.world.query import bounded_query
from passhat.world.read_guard import MARK, ReadGuard

if TYPE_CHECKING:
    from passhat.world.kind import StateReader


Toggle = Literal["each", "never"]
"""How a :class:`SqliteReader` keeps its queries read-only (its docstring says why)."""


class SqliteReader:
    """Read-only, step-bounded queries on one SQLite connection.

    ``toggle="each"``: ``PRAGMA query_only`` on before each query and off after it (a connection others write
    on between queries: the SQLite file kind). With ``guard`` (``toggle`` then unused): the connection's
    :class:`ReadGuard` on while each query runs (it is asked only as a statement is prepared), and each query marked as a reading
    one (``read_guard.py``): a trial's tools and its grading share the connection, and a ``query_only``
    toggle made the next trial re-prepare every statement (design 037).
    ``toggle="never"``: the connection is read-only already (``FixtureImage.reading``).
    """

    def __init__(self, conn: sqlite3.Connection, tables: Mapping[str, TableInfo], *,
                 toggle: Toggle = "each", guard: ReadGuard | None = None) -> None:
        self.conn = conn
        self._tables = tables
        self._toggle = toggle
        self._guard = guard

    @property
    def tables(self) -> Mapping[str, TableInfo]:
        return self._tables

    def query(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        if self._guard is not None:
            self._guard.reading = True  # asked only as the statement is prepared, all within this call
            try:
                return bounded_query(self.conn, MARK + sql, params, shown=sql)
            except sqlite3.DatabaseError as exc:
                if self._guard.refused is None:
                    raise
                raise self._guard.refusal(sql) from exc
            finally:
                self._guard.reading = False
        if self._toggle == "never":
            return bounded_query(self.conn, sql, params)
        self.conn.execute("PRAGMA query_only = ON")
        try:
            return bounded_query(self.conn, sql, params)
        finally:
            self.conn.execute("PRAGMA query_only = OFF")

    def compile_error(self, sql: str) -> str | None:
        if self._guard is not None:
            self._guard.reading = True
            sql = MARK + sql
        try:
            self.conn.execute("EXPLAIN " + sql)
        except sqlite3.Error as exc:
            if self._guard is not None and self._guard.refused is not None:
                return str(self._guard.refusal(sql.removeprefix(MARK)))
            return str(exc)
        finally:
            if self._guard is not None:
                self._guard.reading = False
        return None


class Savepoint:
    """A call scope on a SQLite connection (``db``): ``SAVEPOINT`` now, ``RELEASE`` or ``ROLLBACK TO`` +
    ``RELEASE`` at the end. A copy is its own scope (no object per call: this is the hot path).

    Savepoints of one name nest (each ``RELEASE`` ends the innermost), so a tool's own
    ``ctx.transaction()`` inside a call is one more of these. A tool that ended the transaction itself
    (``COMMIT``) left no savepoint to return to: its writes cannot be undone, and the trial's connection
    is discarded when the trial ends (``FixtureImage.release``).
    """

    NAME = "passhat_call"
    db: sqlite3.Connection

    def call_scope(self) -> Savepoint:
        self.db.execute("SAVEPOINT passhat_call")
        return self

    def keep(self) -> None:
        db = self.db
        if db.in_transaction:
            try:
                db.execute("RELEASE passhat_call")
            except sqlite3.OperationalError as exc:
                if "no such savepoint" not in str(exc):
                    raise

    def undo(self) -> None:
        db = self.db
        if db.in_transaction:
            try:
                db.execute("ROLLBACK TO passhat_call")
                db.execute("RELEASE passhat_call")
            except sqlite3.OperationalError as exc:
                if "no such savepoint" not in str(exc):
                    raise


MAX_STACKED = 64
"""Completed calls' savepoints a trial leaves open at most (:meth:`SqliteCopy.keep`)."""


class SqliteCopy(Savepoint):
    """One trial's private copy of an in-memory image: a pooled connection inside the trial savepoint."""

    kind = "sqlite"
    facet: Facet = "rows"
    blocking = False

    def __init__(self, image: FixtureImage, conn: sqlite3.Connection) -> None:
        self.image = image
        self.db = conn
        self.handle: object = conn
        self._reader = SqliteReader(conn, image.tables, guard=image.guard(conn))
        self._open = True
        # change_mark's cache: the log position at a total_changes count (the image's, as nothing is written yet)
        self._mark, self._mark_changes = image.log_end(conn), conn.total_changes
        self._depth = 0
        """Call scopes open now (a tool's own ``ctx.transaction()`` is one more inside its call's)."""
        self._stacked = 0
        """Savepoints of completed calls left open (:meth:`keep`)."""

    def call_scope(self) -> SqliteCopy:
        self.db.execute("SAVEPOINT passhat_call")
        self._depth += 1
        return self

    def keep(self) -> None:
        """A completed call's savepoint is left open rather than released: the trial savepoint's rollback
        ends it with the rest, and a later call's ``ROLLBACK TO passhat_call`` finds its own, the innermost
        of the name. One statement less per call (at ``-j 256`` each costs 5-50 µs). A scope inside a call
        (``ctx.transaction()``) is released as before, so its call's undo goes back to the call's savepoint;
        past :data:`MAX_STACKED` open savepoints calls release theirs too (each open one is looked at when
        a page is first written)."""
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and self._stacked < MAX_STACKED and self.db.in_transaction:
            self._stacked += 1
            return
        super().keep()

    def undo(self) -> None:
        self._depth = max(0, self._depth - 1)
        super().undo()

    @property
    def tables(self) -> dict[str, TableInfo]:
        return self.image.tables

    def reach(self) -> dict[str, str]:
        return {}

    def current(self, table: TableInfo, key: tuple[Any, ...]) -> dict[str, Any] | None:
        """The row of ``table`` with primary key ``key`` as it is now (``None`` when there is none)."""
        row = self.db.execute(_row_query(table), key).fetchone()
        return dict(zip(table.columns, row, strict=True)) if row is not None else None

    def diff(self) -> Diff:
        """Rows inserted, updated or deleted since the fixture, read from the change log.

        The first log entry of a key holds its state before the trial; the current row is its state
        after. Rows that changed and changed back are not reported.
        """
        return changes_after(self, 0)

    def change_mark(self) -> int:
        """A position in the change log (:class:`~passhat.world.kind.ChangeTracking`). Costs a query only after
        something was written (``total_changes`` counts every row a statement touched)."""
        if self.db.total_changes != self._mark_changes:
            self._mark = int(self.db.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {LOG_TABLE}").fetchone()[0])
            self._mark_changes = self.db.total_changes
        return self._mark

    def changed_since(self, mark: int, limit: int = 200) -> list[tuple[str, list[Any]]]:
        """(table, primary key) of the rows written since ``mark``, in the order first written (at most
        ``limit``). Reads only the new log entries, and nothing when no row was touched since the mark."""
        if mark == self._mark and self.db.total_changes == self._mark_changes:
            return []
        seen: dict[tuple[str, str], None] = {}
        last = mark
        for seq, tbl, pk in self.db.execute(f"SELECT seq, tbl, pk FROM {LOG_TABLE} WHERE seq > ? ORDER BY seq", (mark,)):
            last = seq
            if len(seen) < limit:
                seen.setdefault((tbl, pk))
        self._mark, self._mark_changes = last, self.db.total_changes  # the next call's mark, without a query
        return [(tbl, json.loads(pk)) for tbl, pk in seen]

    def reader(self) -> SqliteReader:
        return self._reader

    def discard(self) -> None:
        """Undo the trial and pool the connection (or discard it if the trial escaped its savepoint)."""
        if self._open:
            self._open = False
            self.image.release(self.db)


@functools.lru_cache(maxsize=1024)
def _row_query(table: TableInfo) -> str:
    """The query of one row by primary key (asked for every changed row of every trial: built once)."""
    where = " AND ".join(f"{_quote(c)} IS ?" for c in table.key)
    cols = ", ".join(_quote(c) for c in table.columns)
    return f"SELECT {cols} FROM {_quote(table.name)} WHERE {where}"


def changes_after(copy: SqliteCopy, seq: int) -> Diff:
    """Rows changed after change-log position ``seq`` (before: as they were then; after: as they are now)."""
    first: dict[tuple[str, str], str | None] = {}
    for tbl, pk, old in copy.db.execute(f"SELECT tbl, pk, old FROM {LOG_TABLE} WHERE seq > ? ORDER BY seq", (seq,)):
        first.setdefault((tbl, pk), old)
    result: dict[str, list[RowChange]] = {}
    tables = copy.image.tables
    for (tbl, pk), old in first.items():
        key = tuple(json.loads(pk))
        before = json.loads(old) if old is not None else None
        after = copy.current(tables[tbl], key)
        if not same_row(before, after):
            result.setdefault(tbl, []).append(RowChange(tbl, key, before, after))
    return Diff(result)


class SqliteImage:
    """The ``sqlite`` kind's image: a :class:`FixtureImage` seen through the world-kind interface."""

    kind = "sqlite"
    facet: Facet = "rows"
    blocking = False

    def __init__(self, fixture: FixtureImage) -> None:
        self.fixture = fixture

    @property
    def start(self) -> datetime:
        return self.fixture.start

    def content_hash(self) -> str:
        return self.fixture.content_hash()

    def open(self) -> SqliteCopy:
        return SqliteCopy(self.fixture, self.fixture.acquire())

    def rebuild(self, diff: Diff) -> SqliteCopy:
        from passhat.world.replay import apply_diff  # replay imports this module

        copy = self.open()
        try:
            apply_diff(copy, diff)
        except BaseException:
            copy.discard()
            raise
        return copy

    @contextmanager
    def reading(self) -> Iterator[StateReader]:
        with self.fixture.reading() as conn:  # a pooled copy: checking a case must not copy a large image again
            yield SqliteReader(conn, self.fixture.tables, toggle="never")

    def close(self) -> None:
        self.fixture.close()
