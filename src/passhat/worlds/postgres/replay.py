"""A recorded row diff applied to a fresh PostgreSQL trial database (re-grading), checked first.

As for a SQLite world (``world/replay.py``): every before-row must equal what the database holds
(redacted values are not compared), deletes go first and inserts last, each by primary key; a table
without one has a matching row deleted, or a row inserted. A mismatch is a :class:`ReplayError`.
"""

from __future__ import annotations

import json
from typing import Any

from passhat.world.diff import Diff, RowChange, same_value
from passhat.world.replay import REDACTED_MARK, ReplayError
from passhat.worlds.postgres.catalog import PgTable
from passhat.worlds.postgres.changelog import quote_ident
from passhat.worlds.postgres.diff import row_key
from passhat.worlds.postgres.reader import to_pyformat


def _param(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)  # text of unknown type: PostgreSQL reads it as the column's type


def _where(columns: list[str], *, key: bool = False) -> str:
    """``c = ?`` for a primary key (never NULL, and its index is used), else ``c IS ?`` (NULL matches NULL)."""
    return " AND ".join(f"{quote_ident(c)} {'=' if key else 'IS'} ?" for c in columns)


def _current(conn: Any, t: PgTable, change: RowChange) -> dict[str, Any] | None:
    if t.key:
        sql, params = f"SELECT to_jsonb(x) FROM {t.target} x WHERE {_where(list(t.key), key=True)}", change.key
    else:
        row = change.before or {}
        sql, params = f"SELECT to_jsonb(x) FROM {t.target} x WHERE {_where(list(row))} LIMIT 1", tuple(row.values())
    found = conn.execute(to_pyformat(sql), tuple(_param(v) for v in params)).fetchone()
    return found[0] if found else None


def _check(conn: Any, t: PgTable, change: RowChange) -> None:
    where = f"{t.name} {list(change.key)}"
    current = _current(conn, t, change) if (t.key or change.before is not None) else None
    if change.before is None:
        if current is not None:
            raise ReplayError(f"{where}: inserted by the trial, but the fixture already has this row")
        return
    if current is None:
        raise ReplayError(f"{where}: the trial {change.kind} it, but the fixture has no such row")
    for col, old in change.before.items():
        if col not in current:
            raise ReplayError(f"{where}: column {col!r} is not in the current schema")
        if not (isinstance(old, str) and REDACTED_MARK in old) and not same_value(old, current[col]):
            raise ReplayError(f"{where}.{col}: the trial started from {old!r}, the fixture now has {current[col]!r}")


def _apply(conn: Any, t: PgTable, change: RowChange) -> None:
    if change.after is None:
        if t.key:
            sql, params = f"DELETE FROM {t.target} WHERE {_where(list(t.key), key=True)}", change.key
        else:
            row = change.before or {}
            sql = f"DELETE FROM {t.target} WHERE ctid = (SELECT ctid FROM {t.target} WHERE {_where(list(row))} LIMIT 1)"
            params = tuple(row.values())
    elif change.before is None:
        row = change.after
        cols = ", ".join(quote_ident(c) for c in row)
        sql, params = f"INSERT INTO {t.target} ({cols}) VALUES ({', '.join('?' for _ in row)})", tuple(row.values())
    else:
        changed = change.changed_fields
        if not changed:
            return
        sets = ", ".join(f"{quote_ident(c)} = ?" for c in changed)
        sql = f"UPDATE {t.target} SET {sets} WHERE {_where(list(t.key), key=True)}"
        params = tuple(change.after[c] for c in changed) + tuple(change.key)
    conn.execute(to_pyformat(sql), tuple(_param(v) for v in params))


def apply_pg_diff(conn: Any, tables: dict[str, PgTable], diff: Diff) -> None:
    """Apply ``diff`` to the database of ``conn`` (a writable admin connection), all or nothing."""
    import psycopg

    order = {"deleted": 0, "updated": 1, "inserted": 2}
    changes = sorted(diff.rows(), key=lambda c: order[c.kind])
    for change in changes:
        if change.table not in tables:
            raise ReplayError(f"table {change.table!r} of the stored diff is not in the fixture; tables: {sorted(tables)}")
    with conn.transaction():
        for change in changes:
            t = tables[change.table]
            if t.key or change.before is not None:
                _check(conn, t, change)
        for change in changes:
            try:
                with conn.transaction():
                    _apply(conn, tables[change.table], change)
            except psycopg.Error as exc:
                raise ReplayError(f"{change.table} {list(change.key)}: cannot apply the stored {change.kind}: "
                                  f"{str(exc).strip().splitlines()[0]}") from None


__all__ = ["apply_pg_diff", "row_key"]
