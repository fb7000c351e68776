"""A PostgreSQL trial's row diff, from its change log, by primary key, in SQL.

Per table the log names (``SELECT DISTINCT tbl``), one query joins the first log entry of each key (the
row before the trial) with the table's current row, looked up by the key through its index: the cost
is the rows changed, not the rows held. A table without a primary key is diffed as a multiset (rows
removed minus rows added, from the whole rows its log entries keep); its changes are keyed by a hash
of the row. Tables the fixture did not have (a server's own ``CREATE TABLE``) count every row as
inserted; a fixture table that is gone (possible only for a role that owns it) every row as deleted.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from passhat.world.diff import Diff, RowChange, same_row
from passhat.worlds.postgres.catalog import PgTable, read_tables
from passhat.worlds.postgres.changelog import LOG, SCHEMA, quote_ident


def lookup_sql(t: PgTable) -> str:
    """The query ``_passhat.diff()`` runs for ``t`` (``$1``: its name in the log): for a keyed table, the
    first entry of each key joined with the row now, by the key (its index); for a keyless one, the log."""
    if not t.key:
        return f"SELECT tbl, NULL::jsonb, old, new FROM {LOG} WHERE tbl = $1 AND pk IS NULL ORDER BY seq"
    on = " AND ".join(f"t.{quote_ident(c)} = (l.pk->>{i})::{typ}"
                      for i, (c, typ) in enumerate(zip(t.key, t.key_types, strict=True)))
    return (f"SELECT $1, l.pk, l.old, to_jsonb(t) FROM (SELECT DISTINCT ON (pk) pk, old FROM {LOG} "
            f"WHERE tbl = $1 AND pk IS NOT NULL ORDER BY pk, seq) l LEFT JOIN {t.target} t ON {on}")


def row_key(row: dict[str, Any]) -> str:
    """The identity of a row of a table without a primary key: a hash of its values."""
    return hashlib.sha256(json.dumps(row, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _ordered(row: dict[str, Any] | None, t: PgTable) -> dict[str, Any] | None:
    """The row's values in column order, floats as floats (``to_jsonb`` writes ``30.0`` as ``30``)."""
    if row is None:
        return None
    out = {c: row.get(c) for c in t.columns} if t.columns else dict(row)
    for c in t.floats:
        value = out.get(c)
        if isinstance(value, int) and not isinstance(value, bool):
            out[c] = float(value)
    return out


def read_diff(conn: Any, tables: dict[str, PgTable], fixture_rows: Callable[[PgTable], list[dict[str, Any]]]) -> Diff:
    """The diff of the database ``conn`` is connected to against its template (``tables``: the template's),
    in one round trip (``_passhat.diff()``). ``fixture_rows`` reads a table's rows as the fixture had them
    (for a table the trial dropped)."""
    entries: dict[str, list[tuple[Any, Any, Any]]] = {}
    now: set[str] = set(tables)
    for tbl, pk, old, new in conn.execute(f"SELECT * FROM {SCHEMA}.diff()"):
        if tbl == "#tables":
            now = set(old)
        else:
            entries.setdefault(tbl, []).append((pk, old, new))
    out: dict[str, list[RowChange]] = {}
    for name, rows in entries.items():
        t = tables[name]
        changes = _keyed(t, rows) if t.key else _keyless(t, rows)
        if changes:
            out[name] = changes
    if now != set(tables):
        current = read_tables(conn)
        for name in sorted(now - set(tables)):  # created in the trial: every row is new
            t = current[name]
            cur = conn.execute(f"SELECT to_jsonb(t) FROM {t.target} t")
            out[name] = [RowChange(name, _key_of(t, r), None, _ordered(r, t)) for (r,) in cur]
        for name in sorted(set(tables) - now):  # dropped in the trial: every fixture row is gone
            t = tables[name]
            out[name] = [RowChange(name, _key_of(t, r), _ordered(r, t), None) for r in fixture_rows(t)]
    return Diff({k: v for k, v in out.items() if v})


def _key_of(t: PgTable, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row.get(c) for c in t.key) if t.key else (row_key(row),)


def _keyed(t: PgTable, rows: list[tuple[Any, Any, Any]]) -> list[RowChange]:
    changes = []
    for pk, old, new in rows:
        before, after = _ordered(old, t), _ordered(new, t)
        if not same_row(before, after):
            changes.append(RowChange(t.name, tuple(pk), before, after))
    return changes


def _keyless(t: PgTable, rows: list[tuple[Any, Any, Any]]) -> list[RowChange]:
    removed: Counter[str] = Counter()
    added: Counter[str] = Counter()
    seen: dict[str, dict[str, Any]] = {}
    for _, old, new in rows:
        for row, side in ((old, removed), (new, added)):
            if row is not None:
                text = json.dumps(row, sort_keys=True, default=str)
                seen[text] = row
                side[text] += 1
    changes = []
    for text, n in sorted((removed - added).items()):
        row = _ordered(seen[text], t)
        changes += [RowChange(t.name, (row_key(row or {}),), row, None)] * n
    for text, n in sorted((added - removed).items()):
        row = _ordered(seen[text], t)
        changes += [RowChange(t.name, (row_key(row or {}),), None, row)] * n
    return changes
