"""A fixture's fingerprint: a hash of the state trials start from, not of the code or files that built it.

A fixture function may read anything (a JSON file beside the domain, a generated table, a seed); hashing
its source would miss all of it. Hashing the state it produced covers it whatever it read. The hash is a
logical dump — schema objects, then every row of every table in storage order, typed — so it does not
depend on the SQLite version or page layout, as serialized bytes would (docs/design/014).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from datetime import datetime

_BATCH = 5_000


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _rows(conn: sqlite3.Connection, table: str) -> Iterable[list[tuple[object, ...]]]:
    """The table's rows in storage order, rowid included (it is the order of an unordered SELECT)."""
    try:
        cur = conn.execute(f"SELECT rowid, * FROM {_quote(table)} ORDER BY rowid")
    except sqlite3.OperationalError:  # WITHOUT ROWID: stored in primary key order
        cur = conn.execute(f"SELECT * FROM {_quote(table)} ORDER BY {_key_order(conn, table)}")
    cur.row_factory = None  # plain tuples: their repr is the typed value (1 vs 1.0 vs '1')
    while batch := cur.fetchmany(_BATCH):
        yield batch


def _key_order(conn: sqlite3.Connection, table: str) -> str:
    info = conn.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
    key = [r[1] for r in sorted((r for r in info if r[5] > 0), key=lambda r: r[5])]
    return ", ".join(_quote(c) for c in key) or "1"


def state_hash(conn: sqlite3.Connection, start: datetime, *, skip_table: str, skip_trigger_prefix: str) -> str:
    """SHA-256 of the database's schema objects and rows, and of the world's start time.

    ``skip_table`` and triggers named ``skip_trigger_prefix…`` are the harness's change log, not the fixture.
    """
    h = hashlib.sha256()
    h.update(f"start {start.isoformat()}\n".encode())
    h.update(f"user_version {conn.execute('PRAGMA user_version').fetchone()[0]}\n".encode())
    objects = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ).fetchall()
    tables = []
    for kind, name, table, sql in objects:
        if name == skip_table or table == skip_table or (kind == "trigger" and name.startswith(skip_trigger_prefix)):
            continue
        h.update(repr((kind, name, table, sql)).encode() + b"\n")
        if kind == "table":
            tables.append(name)
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
        tables.append("sqlite_sequence")  # AUTOINCREMENT counters: the next id a tool gets is state too
    for table in tables:
        h.update(f"rows of {table}\n".encode())
        for batch in _rows(conn, table):
            h.update(repr(batch).encode())
    return h.hexdigest()
