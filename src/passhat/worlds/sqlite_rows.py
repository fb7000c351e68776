"""The rows that differ between a SQLite file and its image, within the rowid intervals pages point at.

``sqlite_pages.py`` says which tables and rowid intervals a trial's copy may have changed; here those
rows are compared with the image (attached read-only, ``immutable``) inside SQLite, both ways
(``EXCEPT``), and matched by primary key (``rowid`` for a table without one). Tables that appear only in
the copy count every row as inserted; a table the copy dropped, every row as deleted.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from passhat.world.diff import Diff, RowChange, same_row
from passhat.world.image import TableInfo, _quote, read_tables
from passhat.worlds.sqlite_pages import EVERY_ROW, Interval


def diff_tables(conn: sqlite3.Connection, image: Path, scope: dict[str, tuple[TableInfo, list[Interval]]], *,
                schema_changed: bool) -> Diff:
    """Rows of the tables in ``scope`` (within their rowid intervals) that differ between the database of
    ``conn`` and the ``image`` file, matched by primary key."""
    conn.execute("ATTACH DATABASE ? AS passhat_image", (f"file:{image}?mode=ro&immutable=1",))
    try:
        out: dict[str, list[RowChange]] = {}
        for name, (t, ranges) in sorted(scope.items()):
            changes = _table_changes(conn, t, _rowids(ranges))
            if changes:
                out[name] = changes
        if schema_changed:
            out.update(_created_tables(conn, {n: t for n, (t, _) in scope.items()}))
        return Diff(out)
    finally:
        conn.execute("DETACH DATABASE passhat_image")


def _rowids(ranges: list[Interval]) -> str:
    """A WHERE clause for the union of rowid intervals (merged), or '' for every row."""
    if not ranges or EVERY_ROW in ranges:
        return ""
    low = float("-inf")
    merged: list[list[float]] = []
    for lo, hi in sorted(((low if a is None else a), (float("inf") if b is None else b)) for a, b in ranges):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    parts = []
    for lo, hi in merged:
        terms = ([f"rowid > {int(lo)}"] if lo != low else []) + ([f"rowid <= {int(hi)}"] if hi != float("inf") else [])
        parts.append(" AND ".join(terms) or "1")
    return " WHERE " + " OR ".join(f"({p})" for p in parts)


def _table_changes(conn: sqlite3.Connection, t: TableInfo, rowids: str = "") -> list[RowChange]:
    q = _quote(t.name)
    if not conn.execute("SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?", (t.name,)).fetchone():
        cols = ", ".join(_quote(c) for c in t.columns)  # dropped in the trial: every fixture row is gone
        rows = conn.execute(f"SELECT {', '.join(_quote(k) for k in t.key)}, {cols} FROM passhat_image.{q}").fetchall()
        n = len(t.key)
        return [RowChange(t.name, tuple(r[:n]), dict(zip(t.columns, r[n:], strict=True)), None) for r in rows]
    key_cols = list(t.key)
    cols = ", ".join(_quote(c) for c in t.columns)
    picked = ", ".join(_quote(c) for c in [*key_cols, *t.columns]) if t.key == ("rowid",) else cols
    main, base = f"SELECT {picked} FROM main.{q}{rowids}", f"SELECT {picked} FROM passhat_image.{q}{rowids}"
    after = conn.execute(f"{main} EXCEPT {base}").fetchall()
    before = conn.execute(f"{base} EXCEPT {main}").fetchall()
    names = [*key_cols, *t.columns] if t.key == ("rowid",) else list(t.columns)
    index = [names.index(k) for k in key_cols]

    def keyed(rows: list[Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
        out = {}
        for r in rows:
            values = tuple(r)
            out[tuple(values[i] for i in index)] = {c: values[names.index(c)] for c in t.columns}
        return out

    old, new = keyed(before), keyed(after)
    changes = []
    for key in sorted(old.keys() | new.keys(), key=repr):
        b, a = old.get(key), new.get(key)
        if not same_row(b, a):
            changes.append(RowChange(t.name, key, b, a))
    return changes


def _created_tables(conn: sqlite3.Connection, known: dict[str, TableInfo]) -> dict[str, list[RowChange]]:
    """Tables a trial created: every row is new (a dropped one is diffed as all-deleted by the caller's
    full comparison, since it stays in ``known``)."""
    out = {}
    for name, t in read_tables(conn).items():
        if name in known or name.startswith("sqlite_"):
            continue
        cols = ", ".join(_quote(c) for c in t.columns)
        rows = [dict(zip(t.columns, r, strict=True)) for r in conn.execute(f"SELECT {cols} FROM main.{_quote(name)}")]
        out[name] = [RowChange(name, tuple(r[k] for k in t.key if k in r) or (i,), None, r) for i, r in enumerate(rows)]
    return {k: v for k, v in out.items() if v}
