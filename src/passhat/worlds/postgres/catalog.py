"""What a PostgreSQL world's tables are (columns, primary keys, key types), and a hash of its state.

Tables of every user schema count (not ``pg_*``, ``information_schema`` or the harness's ``_passhat``).
A table of ``public`` is named by its name, as in a SQLite world, so assertions read the same on both;
a table of another schema is named ``schema.table``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from passhat.world.image import TableInfo
from passhat.worlds.postgres.changelog import SCHEMA, quote_ident

NO_KEY = ("rowid",)
"""The key a table without a primary key is given in ``TableInfo`` (as a SQLite world gives it)."""

_USER_SCHEMAS = (f"n.nspname NOT IN ('pg_catalog', 'information_schema', '{SCHEMA}') "
                 "AND n.nspname NOT LIKE 'pg\\_%'")


@dataclass(frozen=True)
class PgTable:
    """One table: where it is, how diffs name it, its columns and its primary key with the key's types."""

    schema: str
    table: str
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    key_types: tuple[str, ...]
    floats: frozenset[str] = frozenset()
    """Columns of a floating-point type: ``to_jsonb`` writes ``30.0`` as ``30``, so the diff turns those
    back into floats (a SQLite world's REAL column gives ``30.0``)."""

    @property
    def target(self) -> str:
        return f"{quote_ident(self.schema)}.{quote_ident(self.table)}"

    def info(self) -> TableInfo:
        return TableInfo(self.name, self.columns, self.key or NO_KEY)


def read_tables(conn: Any) -> dict[str, PgTable]:
    """Every user table of the connected database, by the name diffs give it."""
    rows = conn.execute(f"""
        SELECT n.nspname, c.relname, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND {_USER_SCHEMAS} ORDER BY 1, 2""").fetchall()
    tables: dict[str, PgTable] = {}
    for schema, table, oid in rows:
        described = conn.execute(
            "SELECT attname, atttypid::regtype::text FROM pg_attribute WHERE attrelid = %s AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum", (oid,)).fetchall()
        cols = [r[0] for r in described]
        floats = frozenset(r[0] for r in described if r[1] in ("real", "double precision"))
        key = conn.execute("""
            SELECT a.attname, format_type(a.atttypid, a.atttypmod)
            FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, pos)
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
            WHERE i.indrelid = %s AND i.indisprimary ORDER BY k.pos""", (oid,)).fetchall()
        name = table if schema == "public" else f"{schema}.{table}"
        tables[name] = PgTable(schema, table, name, tuple(cols), tuple(r[0] for r in key), tuple(r[1] for r in key),
                               floats)
    return tables


def state_hash(conn: Any, tables: dict[str, PgTable], start: datetime) -> str:
    """SHA-256 of the schema (columns and types, constraints, indexes), every row in key order, sequence
    positions and the start time: what trials start from, however it was built (docs/design/014)."""
    h = hashlib.sha256()
    h.update(f"postgres start {start.isoformat()}\n".encode())
    for (line,) in conn.execute(f"""
        SELECT format('%s.%s %s %s', n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod))
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped AND {_USER_SCHEMAS}
        UNION ALL
        SELECT format('constraint %s.%s %s', n.nspname, c.relname, pg_get_constraintdef(k.oid))
        FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE {_USER_SCHEMAS}
        UNION ALL
        SELECT format('index %s', pg_get_indexdef(i.indexrelid)) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {_USER_SCHEMAS}
        ORDER BY 1"""):
        h.update(line.encode() + b"\n")
    for name in sorted(tables):
        t = tables[name]
        order = ", ".join(quote_ident(c) for c in (t.key or t.columns))
        h.update(f"rows of {name}\n".encode())
        with conn.cursor() as cur:
            cur.execute(f"SELECT to_jsonb(t)::text FROM {t.target} t ORDER BY {order}")
            while batch := cur.fetchmany(5000):
                h.update("\n".join(r[0] for r in batch).encode())
    h.update(_sequences(conn).encode())
    return h.hexdigest()


def _sequences(conn: Any) -> str:
    """Where each sequence stands: the next id a tool gets is part of the state."""
    out = []
    for schema, name in conn.execute(f"""SELECT n.nspname, c.relname FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'S' AND {_USER_SCHEMAS} ORDER BY 1, 2"""):
        value, called = conn.execute(f"SELECT last_value, is_called FROM {quote_ident(schema)}.{quote_ident(name)}").fetchone()
        out.append(f"sequence {schema}.{name} {value} {called}\n")
    return "".join(out)
