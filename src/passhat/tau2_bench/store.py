"""τ²'s databases kept as passhat's world: one table per field of a database model, records as τ²'s models.

A τ² toolkit works on ``self.db``, a pydantic model whose fields are collections of records (``orders:
Dict[str, Order]``, ``lines: List[Line]``) or single records (the user's ``device``). Each field becomes a
table (the user's database's fields are prefixed ``user_``): a dict field has a row per key, a list field
a row per position, a single record one row. Rows are stored with τ-bench's column layout
(:class:`passhat.tau_bench.tables.Layout`: a column per field, JSON text for nested values, ``_more`` for
fields added later).

What is stored is exactly what τ²'s database hash sees: ``model_dump()`` through ``json.dumps(default=str)``.
So a number keeps its type (a tool that stores ``25`` into a ``float`` field keeps an integer, as τ²'s
hash does), dates are their ``str()``, and enums their values.

For a call, :meth:`Store.attach` hands τ²'s toolkits a database model whose dict fields are
:class:`ModelMap` views: a record is read from its row and validated into τ²'s model only when the tool
asks for it (and every record only when it iterates); list fields and single records are read whole (they
are small). :meth:`Attachment.write_back` stores what changed. Validation turns the integer ``25`` of a
``float`` field into ``25.0``; every scalar whose stored form validation changed is put back as stored
(:func:`exact`), so a record read and written back is the record τ² would have kept in memory.
"""

from __future__ import annotations

import json
import sqlite3
import typing
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

from passhat.errors import DomainError
from passhat.tau_bench.tables import Layout, TableView

Shape = Literal["map", "list", "one"]
Side = Literal["agent", "user"]
WRAPPED = "value"
"""The column of a record that is not an object (a field ``Dict[str, float]``): ``{"value": 25.0}``."""


def stored(value: Any) -> Any:
    """``value`` as τ²'s hash sees it: ``model_dump()`` through ``json.dumps(..., default=str)``."""
    dumped = value.model_dump(warnings=False) if isinstance(value, BaseModel) else _dump_nested(value)
    return json.loads(json.dumps(dumped, default=str))


def _dump_nested(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _dump_nested(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_dump_nested(v) for v in value]
    return value.model_dump(warnings=False) if isinstance(value, BaseModel) else value


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def exact(value: Any, raw: Any) -> Any:
    """``value`` (validated from ``raw``) with each scalar whose stored form validation changed put back as
    ``raw`` had it: ``25`` stays an integer in a ``float`` field, a string a tool put in a date field stays
    that string."""
    kind = type(value)
    if kind is type(raw) and kind in _SCALARS or value is None:
        return value if value == raw or value is None else raw
    if isinstance(value, BaseModel):
        if isinstance(raw, dict):
            fields = value.__dict__
            for name in type(value).model_fields:
                if name in raw:
                    fields[name] = exact(fields[name], raw[name])
        return value
    if isinstance(value, dict):
        if isinstance(raw, dict) and len(value) == len(raw):
            for (k, v), r in zip(list(value.items()), raw.values(), strict=True):
                value[k] = exact(v, r)
        return value
    if isinstance(value, list):
        if isinstance(raw, list) and len(value) == len(raw):
            for i, (v, r) in enumerate(zip(value, raw, strict=True)):
                value[i] = exact(v, r)
        return value
    return value if _same(json.loads(json.dumps(value, default=str)), raw) else raw


_SCALARS = (str, int, float, bool)


@dataclass(frozen=True)
class Part:
    """One field of a τ² database model, kept as one table."""

    side: Side
    field: str
    shape: Shape
    layout: Layout
    item: TypeAdapter[Any]
    """Validates one record (a value of the dict, an element of the list, or the field's value)."""
    wrapped: bool
    """Records are not objects: each is stored as ``{"value": ...}``."""

    @property
    def table(self) -> str:
        return self.layout.table

    def decode(self, record: dict[str, Any]) -> Any:
        raw = record.get(WRAPPED) if self.wrapped else record
        value = self.item.validate_python(raw)
        if json.dumps(_dump_nested(value), default=str) == json.dumps(raw):  # the usual case: nothing to put back
            return value
        return exact(value, raw)

    def encode(self, value: Any) -> dict[str, Any]:
        data = stored(value)
        return {WRAPPED: data} if self.wrapped else data

    def records(self, value: Any) -> dict[str, dict[str, Any]]:
        """The field's value as rows: key → record."""
        return _records(self.shape, self.field, value, self.encode)


def _records(shape: Shape, name: str, value: Any, encode: Any) -> dict[str, dict[str, Any]]:
    if shape == "map":
        return {str(k): encode(v) for k, v in value.items()}
    if shape == "list":
        return {str(i): encode(v) for i, v in enumerate(value)}
    return {name: encode(value)}


def _shape(annotation: Any) -> tuple[Shape, Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2 and args[0] is str:
        return "map", args[1]
    if origin is list and len(args) == 1:
        return "list", args[0]
    return "one", annotation


def _parts(side: Side, db: BaseModel) -> list[Part]:
    parts = []
    for name, info in type(db).model_fields.items():
        shape, item = _shape(info.annotation)
        value = getattr(db, name)
        plain = _records(shape, name, value, stored)
        wrapped = not all(isinstance(r, dict) for r in plain.values()) if plain else not _is_model(item)
        table = name if side == "agent" else f"user_{name}"
        records = {k: ({WRAPPED: r} if wrapped else r) for k, r in plain.items()}
        layout = Layout.of(table, records, f"τ² {side} database field {name!r}")
        parts.append(Part(side, name, shape, layout, TypeAdapter(item), wrapped))
    return parts


def _is_model(item: Any) -> bool:
    return isinstance(item, type) and issubclass(item, BaseModel)


class Store:
    """How one τ² environment's databases (the agent's and, in telecom, the user's) are kept as tables."""

    def __init__(self, env: Any) -> None:
        self.parts = _parts("agent", env.tools.db) if _has_db(env.tools) else []
        if _has_db(getattr(env, "user_tools", None)) and env.user_tools.db is not env.tools.db:
            self.parts += _parts("user", env.user_tools.db)
        tables = [p.table for p in self.parts]
        if len(set(tables)) != len(tables):
            raise DomainError(f"τ² databases: two fields map to one table: {sorted(tables)}")

    def schema(self) -> str:
        return "\n".join(p.layout.schema() for p in self.parts)

    def load(self, conn: sqlite3.Connection, env: Any) -> None:
        """Write the databases of ``env`` (as they are in memory) into the empty tables of ``conn``."""
        for part in self.parts:
            records = part.records(getattr(_toolkit(env, part.side).db, part.field))
            part.layout.insert(conn, [part.layout.encode(k, r) for k, r in records.items()])

    def attach(self, conn: sqlite3.Connection, env: Any) -> Attachment:
        """Give ``env``'s toolkits databases read from ``conn`` on demand, for one call."""
        views = {p.table: TableView(conn, p.layout) for p in self.parts}
        dbs: dict[Side, BaseModel] = {}
        handed: list[tuple[Part, Any]] = []
        for side in ("agent", "user"):
            parts = [p for p in self.parts if p.side == side]
            if not parts:
                continue
            kit = _toolkit(env, side)
            values: dict[str, Any] = {}
            for part in parts:
                rows = views[part.table]
                if part.shape == "map":
                    values[part.field] = ModelMap(rows, part)
                elif part.shape == "list":
                    values[part.field] = [part.decode(rows[k]) for k in rows]
                else:
                    values[part.field] = part.decode(rows[part.field])
                handed.append((part, values[part.field]))
            dbs[side] = type(kit.db).model_construct(**values)
            kit.db = dbs[side]
        if "user" not in dbs and _has_db(getattr(env, "user_tools", None)) and env.user_tools.db is not None:
            env.user_tools.db = dbs.get("agent", env.user_tools.db)  # one database shared, as τ²'s set_state makes it
        return Attachment(dbs, views, handed)


def _has_db(kit: Any) -> bool:
    return kit is not None and isinstance(getattr(kit, "db", None), BaseModel)


def _toolkit(env: Any, side: Side) -> Any:
    return env.tools if side == "agent" else env.user_tools


@dataclass
class Attachment:
    """The databases one call's toolkits work on, and how to store what the call changed."""

    dbs: dict[Side, BaseModel]
    views: dict[str, TableView]
    handed: list[tuple[Part, Any]]

    def write_back(self, *, maps: bool = True) -> None:
        """Store every change to the records; ``maps=False`` skips the dict fields (a call that does not
        mutate: τ² does not replay such a call when it grades, so its changes would not count there)."""
        for part, given in self.handed:
            if part.shape == "map" and not maps:
                continue
            current = getattr(self.dbs[part.side], part.field)
            rows = self.views[part.table]
            if isinstance(current, ModelMap) and current is given:
                current.write_back()
                continue
            records = part.records(current)  # replaced, or a list / single record: compare whole
            for key in [k for k in rows if k not in records]:
                del rows[key]
            for key, record in records.items():
                rows[key] = record
            rows.write_back()


class ModelMap(MutableMapping[str, Any]):
    """A dict field of a τ² database, read from its table a record at a time as τ²'s models."""

    def __init__(self, rows: TableView, part: Part) -> None:
        self._rows = rows
        self._part = part
        self._models: dict[str, Any] = {}
        self._gone: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        if key in self._models:
            return self._models[key]
        if key in self._gone:
            raise KeyError(key)
        model = self._part.decode(self._rows[key])  # KeyError when there is no such row
        self._models[key] = model
        return model

    def __setitem__(self, key: str, value: Any) -> None:
        self._models[key] = value
        self._gone.discard(key)

    def __delitem__(self, key: str) -> None:
        self[key]  # noqa: B018 - KeyError when it does not exist
        del self._models[key]
        self._gone.add(key)

    def __iter__(self) -> Iterator[str]:
        keys = [k for k in self._rows if k not in self._gone]
        known = set(keys)
        return iter(keys + [k for k in self._models if k not in known])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"<τ² records {self._part.table!r}>"

    def write_back(self) -> None:
        for key in self._gone:
            if key in self._rows:
                del self._rows[key]
        for key, model in self._models.items():
            self._rows[key] = self._part.encode(model)
        self._rows.write_back()
