"""Assertions' SQL on a PostgreSQL world: the graders' ``?`` markers, SQLite-like parameters, plain values.

Graders and case files write SQL once for every database kind (docs/worlds.md): double-quoted
identifiers, ``?`` parameter markers. Here ``?`` becomes psycopg's ``%s`` (a literal ``%`` is doubled),
and ``x IS ?`` becomes ``x IS NOT DISTINCT FROM %s`` (PostgreSQL's ``IS`` takes only ``NULL``, ``TRUE``,
``FALSE``); text inside quotes, dollar quotes and comments is left alone. Parameters are sent as text
of unknown type, so PostgreSQL reads each as the type of what it is compared with — ``7`` matches a
text ``'7'`` and an integer ``7`` alike, as SQLite's column affinity does. Values come back plain:
``numeric`` as ``int`` or ``float``, times as ISO 8601 text (as the diff's, which ``to_jsonb`` writes).

Queries run on a read-only session with a time limit (``statement_timeout``): unlike SQLite's step
budget it is a clock, so a query near the limit could pass on an idle machine and fail on a busy one;
the limit is far above any grading query, so only a runaway query meets it.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from passhat.world.image import TableInfo
from passhat.world.query import QueryBudgetExceeded

QUERY_SECONDS = 10.0
"""How long one assertion's query may run on a PostgreSQL world before it is stopped."""
_IS = re.compile(r"\bIS\s+(NOT\s+)?$", re.IGNORECASE)
_DOLLAR = re.compile(r"\$[A-Za-z_]*\$")


def to_pyformat(sql: str) -> str:
    """``?`` markers outside quotes and comments as ``%s`` (``IS ?`` as ``IS NOT DISTINCT FROM %s``), and
    every ``%`` as ``%%`` (psycopg reads ``%`` inside literals too)."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":
            end = _closing(sql, i + 1, ch)
            out.append(sql[i:end].replace("%", "%%"))  # psycopg reads % everywhere, quotes or not
            i = end
        elif ch == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif ch == "/" and sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif ch == "$" and (m := _DOLLAR.match(sql, i)):
            end = sql.find(m.group(0), m.end())
            end = n if end < 0 else end + len(m.group(0))
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif ch == "?":
            text = "".join(out)
            m = _IS.search(text)
            if m:
                out = [text[:m.start()], "IS DISTINCT FROM %s" if m.group(1) else "IS NOT DISTINCT FROM %s"]
            else:
                out.append("%s")
            i += 1
        elif ch == "%":
            out.append("%%")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _closing(sql: str, i: int, quote: str) -> int:
    """The index just past the quote that closes the one before ``i`` (a doubled quote is an escape)."""
    while True:
        j = sql.find(quote, i)
        if j < 0:
            return len(sql)
        if sql.startswith(quote * 2, j):
            i = j + 2
            continue
        return j + 1


def plain(value: Any) -> Any:
    """A value as a SQLite world would give it: numbers as numbers, times and ids as text."""
    if isinstance(value, Decimal):
        if value == value.to_integral_value() and value.as_tuple().exponent >= 0:  # type: ignore[operator]
            return int(value)
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def as_text(param: Any) -> Any:
    """A parameter as text of unknown type (``None`` stays NULL), so the server picks the column's type."""
    if param is None or isinstance(param, str):
        return param
    if isinstance(param, bool):
        return "true" if param else "false"
    return str(param)


class PgReader:
    """Read-only queries on one trial database, through a session that refuses writes."""

    def __init__(self, conn: Any, tables: Mapping[str, TableInfo]) -> None:
        self.conn = conn
        self._tables = tables

    @property
    def tables(self) -> Mapping[str, TableInfo]:
        return self._tables

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        if isinstance(params, dict):
            raise ValueError("a PostgreSQL world takes ? markers with a tuple of parameters, not named ones")
        try:
            if params:
                cur = self.conn.execute(to_pyformat(sql), tuple(as_text(p) for p in params))
            else:
                cur = self.conn.execute(sql)
            rows = cur.fetchall() if cur.description is not None else []
        except psycopg.errors.QueryCanceled:
            raise QueryBudgetExceeded(f"query stopped after {QUERY_SECONDS:g}s without finishing (a runaway query, "
                                      f"e.g. a WITH RECURSIVE without a stopping condition; bound it with WHERE or "
                                      f"LIMIT): {sql}") from None
        return [tuple(plain(v) for v in row) for row in rows]

    def compile_error(self, sql: str) -> str | None:
        import psycopg

        try:
            self.conn.execute("EXPLAIN " + sql)
        except psycopg.Error as exc:
            text = str(exc).strip()
            return text.splitlines()[0] if text else type(exc).__name__
        return None


def read_only(conn: Any) -> None:
    """Make ``conn``'s session refuse writes and stop a query after :data:`QUERY_SECONDS`."""
    conn.execute("SET default_transaction_read_only = on")
    conn.execute(f"SET statement_timeout = {int(QUERY_SECONDS * 1000)}")
    conn.execute("SET TimeZone = 'UTC'")
