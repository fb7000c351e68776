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

τ-bench's tools do not read the tables: they get the records as dicts, kept in memory per process and
per trial, and only the records a call changed are encoded and written back (:mod:`.store`).
:class:`TableView` reads a table on demand for one call and writes back what changed (the τ² importer's
store uses it).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from passhat.errors import DomainError

Row = tuple[Any, ...]


def quote(name: str) -> str:
    """An SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _plain(value: Any) -> bool:
    """Stored in a column as it is (bool is excluded: SQLite would hand back 1)."""
    return type(value) in (str, int, float)


def _encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, check_circular=False)``, calling json's C encoder directly.

    ``JSONEncoder.encode`` makes a new C encoder for every value (~1.5 µs of a 5 µs field); this one is made
    once. The text is the same byte for byte: the C encoder is what ``json.dumps`` itself runs, with the
    same separators and float repr. Without the circular check (a marker dict shared between values could
    keep stale entries after an error), a record that contains itself fails with ``RecursionError``
    instead of ``ValueError``: the call fails either way, and nothing is written."""
    python = json.JSONEncoder(ensure_ascii=False, check_circular=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no _json extension (another Python): the pure-Python encoder gives the same text
        return python.encode
    encode = make(None, python.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    join = "".join

    def dumps(value: Any) -> str:
        return join(encode(value, 0))

    return dumps


_dumps = _encoder()
"""The JSON text of a field or of ``_more`` (:func:`_encoder`)."""


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

    @cached_property
    def _positions(self) -> dict[str, int]:
        """Each field column's position in a row."""
        return {column: i for i, column in enumerate(self.columns, 1)}

    @cached_property
    def _known(self) -> frozenset[str]:
        return frozenset(self.columns)

    @cached_property
    def _updates(self) -> dict[tuple[int, ...], str]:
        return {}

    def update(self, positions: tuple[int, ...]) -> str:
        """``UPDATE`` of the columns at ``positions`` of a row (1: the first field column; the row's key is the
        last parameter), built once per set of columns."""
        sql = self._updates.get(positions)
        if sql is None:
            names = (self.key, *self.columns, self.more)
            sets = ", ".join(f"{quote(names[i])} = ?" for i in positions)
            sql = self._updates[positions] = f"UPDATE {quote(self.table)} SET {sets} WHERE {quote(self.key)} = ?"
        return sql

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
        known = self._known
        more.update((name, value) for name, value in record.items() if name not in known)
        return (key, *values, _dumps(more) if more else None)

    def encode_fields(self, record: Mapping[str, Any], old: Row, fields: Iterable[Any]) -> Row:
        """What :meth:`encode` gives for ``record`` when its row was ``old`` and only ``fields`` of it changed
        since: those columns (and ``_more`` where a field may be in it) are encoded again, the others kept."""
        row = list(old)
        more = False
        positions = self._positions
        for field in fields:
            i = positions.get(field)
            if i is None:  # a field without a column: it is in _more
                more = True
            elif field not in record:
                row[i] = None
                more = more or (old[i] is None and field not in self.json_columns)  # it may have been in _more
            elif field in self.json_columns:
                row[i] = _dumps(record[field])
            else:
                value = record[field]
                plain = _plain(value)
                row[i] = value if plain else None
                more = more or not plain or old[i] is None
        if more:
            extra = {c: record[c] for c in self.columns
                     if c not in self.json_columns and c in record and not _plain(record[c])}
            known = self._known
            extra.update((name, value) for name, value in record.items() if name not in known)
            row[-1] = _dumps(extra) if extra else None
        return tuple(row)

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


class TableView(MutableMapping[str, Any]):
    """One collection read from a table on demand, for one call (the τ² importer's databases use it; τ-bench's
    tools get :class:`~passhat.tau_bench.store.JsonCollections`' in-memory records instead).

    Records are plain dicts that tools may change in place; :meth:`write_back` compares each record it
    handed out with the row it came from and writes inserts, updates and deletes. Iteration follows the
    table's insertion order, as the JSON dict's order would.
    """

    def __init__(self, db: sqlite3.Connection, layout: Layout) -> None:
        self._db = db
        self._layout = layout
        self._records: dict[str, Any] = {}
        self._stored: dict[str, Row] = {}
        """Rows as read from the table, for the records loaded (absent: not in the table)."""
        self._deleted: set[str] = set()
        self._complete = False

    def _fetch(self, key: str) -> bool:
        """Load ``key`` from the table unless it is loaded, deleted or known not to exist."""
        if key in self._records or key in self._deleted or self._complete or not isinstance(key, str):
            return key in self._records
        row = self._db.execute(f"{self._layout.select} WHERE {quote(self._layout.key)} = ?", (key,)).fetchone()
        if row is None:
            return False
        self._stored[key] = tuple(row)
        self._records[key] = self._layout.decode(tuple(row))
        return True

    def _load_all(self) -> None:
        if self._complete:
            return
        ordered: dict[str, Any] = {}
        for raw in self._db.execute(f"{self._layout.select} ORDER BY rowid"):
            row = tuple(raw)
            key = row[0]
            if key in self._deleted:
                continue
            if key not in self._stored:
                self._stored[key] = row
                ordered[key] = self._layout.decode(row)
            else:
                ordered[key] = self._records[key]
        ordered.update((k, v) for k, v in self._records.items() if k not in ordered)  # inserted by this call
        self._records = ordered
        self._complete = True

    def __getitem__(self, key: str) -> Any:
        if not self._fetch(key):
            raise KeyError(key)
        return self._records[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._fetch(key)
        self._deleted.discard(key)
        self._records[key] = value

    def __delitem__(self, key: str) -> None:
        if not self._fetch(key):
            raise KeyError(key)
        del self._records[key]
        self._deleted.add(key)

    def __iter__(self) -> Iterator[str]:
        self._load_all()
        return iter(list(self._records))

    def __len__(self) -> int:
        self._load_all()
        return len(self._records)

    def __repr__(self) -> str:
        return f"<τ-bench collection {self._layout.table!r}>"

    def write_back(self) -> None:
        """Store every change the call made to the records it was handed."""
        layout, table = self._layout, quote(self._layout.table)
        for key in self._deleted:
            if key in self._stored:
                self._db.execute(f"DELETE FROM {table} WHERE {quote(layout.key)} = ?", (key,))
        sets = ", ".join(f"{quote(c)} = ?" for c in (*layout.columns, layout.more))
        for key, record in self._records.items():
            row = layout.encode(key, record)
            before = self._stored.get(key)
            if before is None:
                layout.insert(self._db, [row])
            elif before != row:
                self._db.execute(f"UPDATE {table} SET {sets} WHERE {quote(layout.key)} = ?", (*row[1:], key))


def views(db: sqlite3.Connection, layouts: Mapping[str, Layout]) -> dict[str, TableView]:
    """The ``data`` argument of a τ-bench tool: every collection, loaded only as far as the tool reads it."""
    return {name: TableView(db, layout) for name, layout in layouts.items()}
