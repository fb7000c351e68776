"""The ``postgres`` world kind: a template database built once per run, a database per trial.

The image is the template (``template.py``) and a pool of trial databases cloned from it ahead of time
(``slots.py``). A copy is one of them: its URL is ``{database_url}`` (as the trial's own role, which
cannot see the change log), native tools get ``ctx.pg``, the diff reads the change log (``diff.py``),
assertions read through a read-only session (``reader.py``). Discarding drops the database and the role.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from passhat.world.diff import Diff
from passhat.world.image import TableInfo
from passhat.world.kind import Facet
from passhat.worlds.postgres.catalog import PgTable
from passhat.worlds.postgres.changelog import LOG
from passhat.worlds.postgres.diff import read_diff
from passhat.worlds.postgres.qmark import QmarkConnection
from passhat.worlds.postgres.reader import PgReader, read_only
from passhat.worlds.postgres.replay import apply_pg_diff
from passhat.worlds.postgres.server import PgServer
from passhat.worlds.postgres.slots import Slot, Slots


class PgCall:
    """A native tool call's transaction on the trial's connection: committed, or rolled back if it failed.
    psycopg refuses a ``commit()`` inside it, so a tool cannot break the call's atomicity by accident."""

    __slots__ = ("tx",)

    def __init__(self, conn: Any) -> None:
        self.tx = conn.transaction()
        self.tx.__enter__()

    def keep(self) -> None:
        self.tx.__exit__(None, None, None)

    def undo(self) -> None:
        import psycopg

        self.tx.__exit__(psycopg.Rollback, psycopg.Rollback(), None)


class PgCopy:
    """One trial's database (a :class:`Slot`) as a world part."""

    kind = "postgres"
    facet: Facet = "rows"
    blocking = True

    def __init__(self, image: PgImage, slot: Slot) -> None:
        self.image = image
        self.slot = slot
        self.handle: object = slot.native
        self.db = QmarkConnection(slot.native)
        self._reader = PgReader(slot.harness, image.tables)
        self._open = True

    @property
    def dbname(self) -> str:
        return self.slot.dbname

    def reach(self) -> dict[str, str]:
        return {"database_url": self.slot.url}

    def call_scope(self) -> PgCall:
        return PgCall(self.slot.native)

    def change_mark(self) -> int:
        """The last change-log position (:class:`~passhat.world.kind.ChangeTracking`); the log also holds what
        a server of its own wrote through ``{database_url}``, so its calls are attributed too."""
        return int(self.slot.harness.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {LOG}").fetchone()[0])

    def changed_since(self, mark: int, limit: int = 200) -> list[tuple[str, list[Any]]]:
        """(table, primary key) of the keyed rows written after ``mark``, first-written order (a row of a
        table without a primary key has no key to name)."""
        rows = self.slot.harness.execute(
            f"SELECT tbl, pk FROM (SELECT DISTINCT ON (tbl, pk) seq, tbl, pk FROM {LOG} WHERE seq > %s AND pk IS NOT NULL"
            f" ORDER BY tbl, pk, seq) first ORDER BY seq LIMIT %s", (mark, limit)).fetchall()
        return [(tbl, list(pk)) for tbl, pk in rows]

    def diff(self) -> Diff:
        return read_diff(self.slot.harness, self.image.pg_tables, self.image.fixture_rows)

    def reader(self) -> PgReader:
        return self._reader

    def discard(self) -> None:
        if self._open:
            self._open = False
            self.image.slots.give_back(self.slot)


class PgImage:
    """A PostgreSQL fixture built into a template database, with trial databases made ahead."""

    kind = "postgres"
    facet: Facet = "rows"
    blocking = True

    def __init__(self, server: PgServer, template: str, tables: dict[str, PgTable], start: datetime,
                 state_hash: str, slots: Slots, where: str) -> None:
        self.server = server
        self.template = template
        self.pg_tables = tables
        self.tables: dict[str, TableInfo] = {n: t.info() for n, t in tables.items()}
        self._start = start
        self._hash = state_hash
        self.slots = slots
        self.where = where
        self._reading: tuple[Slot, PgReader] | None = None

    @property
    def start(self) -> datetime:
        return self._start

    def content_hash(self) -> str:
        return self._hash

    def open(self) -> PgCopy:
        return PgCopy(self, self.slots.take())

    def rebuild(self, diff: Diff) -> PgCopy:
        copy = self.open()
        try:
            with self.server.connect(copy.dbname) as conn:  # the harness's session is read-only: a writable one
                conn.execute("SET TimeZone = 'UTC'")
                apply_pg_diff(conn, self.pg_tables, diff)
        except BaseException:
            copy.discard()
            raise
        return copy

    @contextlib.contextmanager
    def reading(self) -> Iterator[PgReader]:
        """The fixture's state, read-only: one trial database kept for it (never written: read-only session,
        and no trial's role may connect to it). A connection to the template itself would stop its cloning."""
        if self._reading is None:
            slot = self.slots.take()
            read_only(slot.harness)
            self._reading = (slot, PgReader(slot.harness, self.tables))
        yield self._reading[1]

    def fixture_rows(self, table: PgTable) -> list[dict[str, Any]]:
        """Every row of ``table`` in the fixture's state (for a diff where a trial dropped the table)."""
        with self.reading() as reader:
            return [r[0] for r in reader.conn.execute(f"SELECT to_jsonb(t) FROM {table.target} t")]

    def close(self) -> None:
        """Drop the ready trial databases, the one kept for reading, and the template."""
        reading, self._reading = self._reading, None
        if reading is not None:
            self.slots.give_back(reading[0])
        self.slots.close_with_template()
