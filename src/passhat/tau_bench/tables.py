"""τ-bench's JSON collections as SQLite tables, and back as the dicts its tools expect.

A τ-bench database is a dict of collections (``orders``, ``users``, …), each a dict of records keyed by
id. Each collection becomes a table: a ``key`` column (the dict key, the primary key), one column per
field of the records (in order of first appearance) and ``_more`` for what fits no column. A column
holds plain values (strings and numbers, stored as given: no type affinity, so ``25`` stays an integer
and ``25.0`` a float) unless some record has a nested value, a boolean or a null in it: then every
value of the column is JSON text (``"pending"`` with its quotes, ``{"city": …}``, ``true``). A missing
field is SQL NULL, so "absent" and ``null`` stay distinct, as they are in τ-bench's hash. A field a tool
adds later, or a value that does not fit its column (a null in a plain column), goes to ``_more`` (a
JSON object), so every record round-trips exactly; fields come back in column order, then ``_more``.

Tools do not read the tables: they get the records as dicts, kept in memory per process and per trial,
and only the records a call changed are encoded and written back (:mod:`.store`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from passhat.errors import DomainError

Row = tuple[Any, ...]


def quote(name: str) -> str:
    """An SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _plain(value: Any) -> bool:
    """Stored in a column as it is (bool is excluded: SQLite would hand back 1)."""
    return type(value) in (str, int, float)


_dumps = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)`` without making an encoder per value (a write encodes several)."""


def _free_name(base: str, taken: set[str]) -> str:
    name = base
    while name in taken:
        name = "_" + name
    return name


@dataclass(frozen=True)
class Layout:
    """How one collection is stored: its table, key column, field columns and which hold JSON text."""

    table: str
    key: str
    """The column holding the record's dict key (``key``, or ``_key`` if a record has a field ``key``)."""
    columns: tuple[str, ...]
    json_columns: frozenset[str]
    more: str
    """The column holding fields that fit no column, as a JSON object (NULL when there are none)."""

    @classmethod
    def of(cls, table: str, records: Any, source: str) -> Layout:
        """The layout of a collection read from ``source`` (a τ-bench data file)."""
        if not isinstance(records, dict) or not all(isinstance(r, dict) for r in records.values()):
            raise DomainError(f"{source}: a τ-bench collection is a JSON object of records keyed by id "
                              "(e.g. {\"#W0001\": {\"status\": \"pending\", ...}}); this file holds something else")
        columns: dict[str, None] = {}
        nested: set[str] = set()
        for record in records.values():
            for name, value in record.items():
                columns.setdefault(name, None)
                if not _plain(value):
                    nested.add(name)
        key = _free_name("key", set(columns))
        more = _free_name("_more", set(columns) | {key})
        return cls(table, key, tuple(columns), frozenset(nested), more)

    def schema(self) -> str:
        """``CREATE TABLE`` for the collection (columns without a type: values are stored as given)."""
        cols = ", ".join(quote(c) for c in (*self.columns, self.more))
        return f"CREATE TABLE {quote(self.table)} ({quote(self.key)} TEXT PRIMARY KEY, {cols});"

    @property
    def select(self) -> str:
        cols = ", ".join(quote(c) for c in (self.key, *self.columns, self.more))
        return f"SELECT {cols} FROM {quote(self.table)}"

    def encode(self, key: str, record: Any) -> Row:
        """The row of one record: key, one value per column, then ``_more``."""
        if not isinstance(record, Mapping):
            raise TypeError(f"{self.table}[{key!r}] must be a dict, not {type(record).__name__}")
        values: list[Any] = []
        more: dict[str, Any] = {}
        for column in self.columns:
            if column not in record:
                values.append(None)
            elif column in self.json_columns:
                values.append(_dumps(record[column]))
            elif _plain(record[column]):
                values.append(record[column])
            else:
                values.append(None)
                more[column] = record[column]
        known = set(self.columns)
        more.update((name, value) for name, value in record.items() if name not in known)
        return (key, *values, _dumps(more) if more else None)

    def decode(self, row: Row) -> dict[str, Any]:
        """The record of one row (as :meth:`encode` wrote it)."""
        record: dict[str, Any] = {}
        for column, value in zip(self.columns, row[1:-1], strict=True):
            if value is not None:
                record[column] = json.loads(value) if column in self.json_columns else value
        if row[-1] is not None:
            record.update(json.loads(row[-1]))
        return record

    def insert(self, db: sqlite3.Connection, rows: list[Row]) -> None:
        marks = ", ".join("?" for _ in range(len(self.columns) + 2))
        db.executemany(f"INSERT INTO {quote(self.table)} VALUES ({marks})", rows)
