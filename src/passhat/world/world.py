"""One trial's world: database, clock, IDs and RNG, all derived from the trial seed."""

from __future__ import annotations

import json
import random
import sqlite3
from typing import TYPE_CHECKING, Any

from passhat.seeding import derive_seed
from passhat.world.clock import Clock, IdGenerator
from passhat.world.diff import Diff, RowChange, same_row
from passhat.world.image import LOG_TABLE, FixtureImage, TableInfo, _quote
from passhat.world.query import bounded_query

if TYPE_CHECKING:
    from passhat.workspace.tree import WorkspaceCopy


class World:
    """The live state of one trial. Create with :meth:`restore`; tools reach it via ``ToolContext``."""

    def __init__(self, image: FixtureImage, conn: sqlite3.Connection, seed: int,
                 workspace: WorkspaceCopy | None = None) -> None:
        self.image = image
        self.db = conn
        self.workspace = workspace
        """The trial's private copy of its workspace fixture (``None`` for a database-only domain)."""
        self.command_env: dict[str, str] = {}
        """Environment variables the domain adds to every command run in the workspace."""
        self.seed = seed
        self.clock = Clock(image.start)
        self.ids = IdGenerator(derive_seed("ids", seed))
        self.rng = random.Random(derive_seed("rng", seed))
        self._mark, self._mark_changes = 0, -1  # change_mark's cache: the log position at a total_changes count

    @classmethod
    def restore(cls, image: FixtureImage, seed: int, workspace: WorkspaceCopy | None = None) -> World:
        """A fresh world in the fixture's initial state. Call :meth:`close` to reset it for reuse.
        ``Domain.restore`` also hands it a fresh copy of the fixture's workspace."""
        return cls(image, image.acquire(), seed, workspace)

    @property
    def tables(self) -> dict[str, TableInfo]:
        return self.image.tables

    def _current(self, table: TableInfo, key: tuple[Any, ...]) -> dict[str, Any] | None:
        where = " AND ".join(f"{_quote(c)} IS ?" for c in table.key)
        cols = ", ".join(_quote(c) for c in table.columns)
        row = self.db.execute(f"SELECT {cols} FROM {_quote(table.name)} WHERE {where}", key).fetchone()
        return dict(zip(table.columns, row, strict=True)) if row is not None else None

    def diff(self) -> Diff:
        """Rows inserted, updated or deleted since the fixture, read from the change log.

        The first log entry of a key holds its state before the trial; the current row is its state
        after. Rows that changed and changed back are not reported.
        """
        first: dict[tuple[str, str], str | None] = {}
        for tbl, pk, old in self.db.execute(f"SELECT tbl, pk, old FROM {LOG_TABLE} ORDER BY seq"):
            first.setdefault((tbl, pk), old)
        result: dict[str, list[RowChange]] = {}
        for (tbl, pk), old in first.items():
            info = self.tables[tbl]
            key = tuple(json.loads(pk))
            before = json.loads(old) if old is not None else None
            after = self._current(info, key)
            if not same_row(before, after):
                result.setdefault(tbl, []).append(RowChange(tbl, key, before, after))
        return Diff(result)

    def change_mark(self) -> int:
        """A position in the change log: :meth:`changed_since` lists what was written after it. Costs a query
        only after something was written (``total_changes`` counts every row a statement touched)."""
        if self.db.total_changes != self._mark_changes:
            self._mark = int(self.db.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {LOG_TABLE}").fetchone()[0])
            self._mark_changes = self.db.total_changes
        return self._mark

    def changed_since(self, mark: int, limit: int = 200) -> list[tuple[str, list[Any]]]:
        """(table, primary key) of the rows written since ``mark``, in the order first written (at most
        ``limit``): which tool call wrote which row, for failure attribution. Reads only the new log entries,
        and nothing when no row was touched since the mark was taken."""
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

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read-only query (graders use this; writes are refused by ``query_only``).

        A query that runs past :data:`~passhat.world.query.QUERY_STEP_BUDGET` raises
        :class:`~passhat.world.query.QueryBudgetExceeded`: the grade fails closed instead of the run hanging.
        """
        self.db.execute("PRAGMA query_only = ON")
        try:
            return bounded_query(self.db, sql, params)
        finally:
            self.db.execute("PRAGMA query_only = OFF")

    def close(self) -> None:
        """End the trial: its changes are undone and the connection is pooled for the next trial; the
        workspace copy is deleted."""
        try:
            self.image.release(self.db)
        finally:
            if self.workspace is not None:
                self.workspace.discard()
