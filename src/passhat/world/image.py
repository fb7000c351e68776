"""Fixture images: a fixture parsed once per run, restored per trial without re-parsing.

τ-bench re-parses its JSON database from disk for every trial (≈0.5 s CPU). We build the SQLite
database once, install change-log triggers, and keep ``Connection.serialize()`` bytes. A trial gets a
connection holding a private copy of those bytes and runs inside a savepoint; when the trial ends the
savepoint is rolled back (and left open for the next trial) and the connection returns to a pool. So a
reset costs O(rows changed), not a copy of the database — which matters at 100× τ-bench scale, where
copying the image took 165 ms. A trial that escaped its savepoint (a tool that committed) gets its
connection discarded, never reused.
The pool holds at most one copy per concurrent world, in memory within a budget and on disk beyond it
(``world/copies.py``); checking cases reuses pooled copies instead of making one per case.

The triggers write the primary key and the *previous* row of every insert, update and delete into
``_passhat_log``. ``World.diff()`` reads that log, so grading cost grows with the number of changed
rows, not with the size of the database.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from passhat.errors import DomainError
from passhat.world.copies import ImageCopies
from passhat.world.fingerprint import state_hash
from passhat.world.read_guard import ReadGuard

LOG_TABLE = "_passhat_log"
TRIGGER_PREFIX = "_ph_"
TRIAL_SAVEPOINT = "passhat_trial"
_READ_SCHEMA = f"SELECT 1 FROM {LOG_TABLE} LIMIT 0"
"""Makes a new copy's connection parse the schema (SQLite does that on a connection's first statement that
names a table): ~0.6 ms for the refunds schema, most of it the change-log triggers. Done when the copy is
made, so a run's lanes pay it as they start, while they wait for their first model answer, not in the
first tool call of their first trial, when the other lanes' trials are being graded (docs/design/040)."""
RowLoader = Callable[[sqlite3.Connection], None]


@dataclass(frozen=True)
class TableInfo:
    """Columns and primary key of one table (``("rowid",)`` when it declares none)."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_tables(conn: sqlite3.Connection) -> dict[str, TableInfo]:
    """User tables of a database with their columns and primary keys."""
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
            "AND name != ? ORDER BY name",
            (LOG_TABLE,),
        )
    ]
    tables: dict[str, TableInfo] = {}
    for name in names:
        info = conn.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
        columns = tuple(r[1] for r in info)
        key = tuple(r[1] for r in sorted((r for r in info if r[5] > 0), key=lambda r: r[5]))
        tables[name] = TableInfo(name, columns, key or ("rowid",))
    return tables


def _json_of(prefix: str, columns: Sequence[str]) -> str:
    pairs = ", ".join(f"'{c}', {prefix}.{_quote(c)}" for c in columns)
    return f"json_object({pairs})"


def _key_of(prefix: str, key: Sequence[str]) -> str:
    return "json_array(" + ", ".join(f"{prefix}.{_quote(c)}" for c in key) + ")"


def install_change_log(conn: sqlite3.Connection, tables: Mapping[str, TableInfo]) -> None:
    """Create the log table and one trigger per table and operation."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS {LOG_TABLE} (seq INTEGER PRIMARY KEY, tbl TEXT, pk TEXT, old TEXT)")
    for t in tables.values():
        q, log = _quote(t.name), LOG_TABLE
        ins = f"INSERT INTO {log}(tbl, pk, old) VALUES ('{t.name}'"
        conn.executescript(
            f"""
            CREATE TRIGGER "{TRIGGER_PREFIX}ins_{t.name}" AFTER INSERT ON {q} BEGIN
              {ins}, {_key_of('NEW', t.key)}, NULL); END;
            CREATE TRIGGER "{TRIGGER_PREFIX}upd_{t.name}" AFTER UPDATE ON {q} BEGIN
              {ins}, {_key_of('OLD', t.key)}, {_json_of('OLD', t.columns)});
              {ins}, {_key_of('NEW', t.key)}, NULL); END;
            CREATE TRIGGER "{TRIGGER_PREFIX}del_{t.name}" AFTER DELETE ON {q} BEGIN
              {ins}, {_key_of('OLD', t.key)}, {_json_of('OLD', t.columns)}); END;
            """
        )


def insert_rows(conn: sqlite3.Connection, rows: Mapping[str, Sequence[Mapping[str, Any]]], source: str) -> None:
    """Insert fixture rows given as ``{table: [ {column: value} ]}``."""
    tables = read_tables(conn)
    for table, items in rows.items():
        if table not in tables:
            raise DomainError(f"{source}: fixture table {table!r} is not in the schema; tables: {sorted(tables)}")
        for i, row in enumerate(items):
            unknown = set(row) - set(tables[table].columns)
            if unknown:
                raise DomainError(
                    f"{source}: {table}[{i}] has unknown columns {sorted(unknown)}; "
                    f"columns: {list(tables[table].columns)}"
                )
            cols = ", ".join(_quote(c) for c in row)
            marks = ", ".join("?" for _ in row)
            try:
                conn.execute(f"INSERT INTO {_quote(table)} ({cols}) VALUES ({marks})", tuple(row.values()))
            except sqlite3.Error as exc:
                raise DomainError(f"{source}: {table}[{i}]: {exc}") from exc


class FixtureImage:
    """A named initial state, built once and restored cheaply for every trial."""

    def __init__(self, name: str, image: bytes, tables: dict[str, TableInfo], start: datetime,
                 memory_budget: int | None = None) -> None:
        self.name = name
        self.tables = tables
        self.start = start
        self._copies = ImageCopies(image, memory_budget)
        self._idle: list[sqlite3.Connection] = []
        self._guards: dict[sqlite3.Connection, ReadGuard] = {}
        """Each pooled copy's authorizer (``read_guard.py``), installed once when the copy was made."""
        self._lock = threading.Lock()
        self._hash: str | None = None
        self._log_end: int | None = None

    @classmethod
    def build(
        cls,
        name: str,
        schema_sql: str,
        loader: RowLoader,
        start: datetime,
        memory_budget: int | None = None,
    ) -> FixtureImage:
        """Create the schema, load the rows, install the change log and serialize.

        ``memory_budget``: bytes of in-memory world copies (default ``copies.DEFAULT_MEMORY_BUDGET``).
        """
        conn = sqlite3.connect(":memory:")
        try:
            try:
                conn.executescript(schema_sql)
            except sqlite3.Error as exc:
                raise DomainError(f"fixture {name!r}: schema failed: {exc}") from exc
            loader(conn)
            conn.commit()
            tables = read_tables(conn)
            install_change_log(conn, tables)
            conn.commit()
            return cls(name, conn.serialize(), tables, start, memory_budget)
        finally:
            conn.close()

    @property
    def image(self) -> bytes:
        """The serialized database (the fixture's state, change log installed)."""
        return self._copies.image

    @property
    def size_bytes(self) -> int:
        """Size of the serialized database."""
        return len(self._copies.image)

    @property
    def copies(self) -> ImageCopies:
        """The private copies live worlds hold (how many in memory, how many on disk)."""
        return self._copies

    def connect(self) -> sqlite3.Connection:
        """A fresh writable in-memory copy of the image, outside the pool: the caller closes it."""
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        conn.deserialize(self.image)
        conn.row_factory = sqlite3.Row
        return conn

    def acquire(self) -> sqlite3.Connection:
        """A connection in the fixture's state, inside the trial savepoint (pooled; see module doc). A pooled
        one is inside it still: :meth:`release` rolled back to it and left it open for the next trial."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._copies.open()
            guard = ReadGuard()
            conn.set_authorizer(guard)  # before anything is prepared: installing one expires every statement
            conn.execute(f"SAVEPOINT {TRIAL_SAVEPOINT}")
            conn.execute(_READ_SCHEMA).fetchall()
            with self._lock:
                self._guards[conn] = guard
        return conn

    def guard(self, conn: sqlite3.Connection) -> ReadGuard:
        """The authorizer of a connection :meth:`acquire` gave out (its grading queries turn it on)."""
        return self._guards[conn]

    def release(self, conn: sqlite3.Connection) -> None:
        """Undo the trial and pool the connection, or discard it if the trial escaped its savepoint.

        ``ROLLBACK TO`` keeps the savepoint it returns to (and ends every one opened after it), so the
        pooled connection waits inside the trial savepoint, in the fixture's state: a trial costs one
        statement to undo and none to begin (at ``-j 256`` each costs 5-50 µs)."""
        try:
            if not conn.in_transaction:
                raise sqlite3.OperationalError("trial savepoint was committed")
            guard = self._guards[conn]
            guard.reading = False
            if guard.set_pragma:  # the next trial must find the connection writable (design 037)
                conn.execute("PRAGMA query_only = OFF")
                guard.set_pragma = False
            conn.execute(f"ROLLBACK TO {TRIAL_SAVEPOINT}")
        except sqlite3.Error:
            self._discard(conn)
            return
        with self._lock:
            self._idle.append(conn)

    def log_end(self, conn: sqlite3.Connection) -> int:
        """The change log's last position in the fixture's state (0: the log starts empty), read once, on
        ``conn`` just acquired: every trial's copy starts there, so none asks again."""
        if self._log_end is None:
            self._log_end = int(conn.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {LOG_TABLE}").fetchone()[0])
        return self._log_end

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A pooled connection in the fixture's state for read-only use (checking cases, hashing)."""
        conn = self.acquire()
        try:
            conn.execute("PRAGMA query_only = ON")  # checking a case, not a trial: a pragma's expiry is no cost here
            yield conn
        finally:
            self.release(conn)  # its guard saw the pragma set: release turns query_only off again

    def content_hash(self) -> str:
        """Hash of the fixture's state (tables, rows, start time): whatever built it, this is what trials see.

        A logical dump, not the serialized bytes, which depend on the SQLite version (docs/design/014).
        """
        if self._hash is None:
            with self.reading() as conn:
                self._hash = state_hash(conn, self.start, skip_table=LOG_TABLE, skip_trigger_prefix=TRIGGER_PREFIX)
        return self._hash

    def close(self) -> None:
        """Discard pooled connections (each holds a copy of the image, in memory or on disk)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            self._discard(conn)

    def _discard(self, conn: sqlite3.Connection) -> None:
        """Close a copy for good (its guard with it)."""
        with self._lock:
            self._guards.pop(conn, None)
        self._copies.discard(conn)
