"""``ctx.db`` on a PostgreSQL world: sqlite3's interface over the trial's psycopg connection.

Tools written for a SQLite world — ``ctx.db.execute("SELECT * FROM orders WHERE id = ?", (7,))``,
``dict(row)``, ``row["total"]``, ``(n,) = cur.fetchone()`` — run unchanged on PostgreSQL when their SQL
is portable (the built-in refunds tools are). Markers become ``%s`` (``reader.to_pyformat``);
parameters go as text of unknown type, so PostgreSQL reads each as the type of its column, close to
SQLite's affinity; values come back plain (``numeric`` as numbers, times as ISO text), as a SQLite
world stores them. ``ctx.pg`` is the psycopg connection itself, for anything else.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from passhat.worlds.postgres.reader import plain, to_pyformat


class Row:
    """A row like ``sqlite3.Row``: by position, by column name, ``keys()``, ``dict(row)``, unpacking."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: Sequence[str], values: Sequence[Any]) -> None:
        self._names = names
        self._values = tuple(plain(v) for v in values)

    def keys(self) -> list[str]:
        return list(self._names)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            try:
                return self._values[self._names.index(key)]
            except ValueError:
                raise IndexError(f"no column {key!r}; columns: {', '.join(self._names)}") from None
        return self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Row) and (self._names, self._values) == (other._names, other._values)

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._names, self._values, strict=True))!r})"


def _param(value: Any) -> Any:
    if value is None or isinstance(value, str | bytes):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


class Cursor:
    """The result of one ``execute``: ``fetchone``, ``fetchall``, ``fetchmany``, iteration, ``rowcount``."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur
        self._names = [c.name for c in cur.description] if cur.description is not None else []

    @property
    def rowcount(self) -> int:
        return int(self._cur.rowcount)

    @property
    def description(self) -> Any:
        return self._cur.description

    @property
    def lastrowid(self) -> None:
        raise AttributeError("a PostgreSQL world has no lastrowid: use INSERT ... RETURNING id")

    def _row(self, values: Any) -> Row | None:
        return None if values is None else Row(self._names, values)

    def fetchone(self) -> Row | None:
        return self._row(self._cur.fetchone()) if self._names else None

    def fetchall(self) -> list[Row]:
        return [Row(self._names, v) for v in self._cur.fetchall()] if self._names else []

    def fetchmany(self, size: int = 100) -> list[Row]:
        return [Row(self._names, v) for v in self._cur.fetchmany(size)] if self._names else []

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


class QmarkConnection:
    """``execute``/``executemany`` with ``?`` markers over a psycopg connection (its transactions are the
    world's: each tool call is one, so there is no ``commit``)."""

    def __init__(self, conn: Any) -> None:
        self.pg = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        cur = self.pg.cursor(row_factory=_tuples)
        if params:
            cur.execute(to_pyformat(sql), tuple(_param(p) for p in params))
        else:
            cur.execute(sql)
        return Cursor(cur)

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> Cursor:
        cur = self.pg.cursor(row_factory=_tuples)
        cur.executemany(to_pyformat(sql), [tuple(_param(p) for p in params) for params in seq])
        return Cursor(cur)


def _tuples(cursor: Any) -> Any:
    from psycopg.rows import tuple_row

    return tuple_row(cursor)
