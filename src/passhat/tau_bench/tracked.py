"""Dicts and lists that say when they are changed, so a call re-encodes only the records it changed.

τ-bench's tools change records in place, deep inside (``user["payment_methods"][pm]["balance"] = …``).
Every dict and list of a record handed to a tool is a :class:`TrackedDict` or :class:`TrackedList`: a
plain ``dict`` / ``list`` (reads run at C speed, ``isinstance(x, dict)`` holds, ``json.dumps`` works)
whose mutating methods first report where they are — the record and the field of it, their
:data:`Cell` — to the call in progress. A record's own dict is a :class:`TrackedRecord`: setting or
deleting one of its keys reports that field alone. So a call that sets an order's ``status`` re-encodes
that column, not the order's items. A collection (``data["orders"]``) is a :class:`TrackedTable`, which
reports the key it sets or deletes. Copies are plain (``copy.deepcopy``, ``dict(x)``, ``x.copy()``,
slices), so changing a copy changes no record.

Every container inside field ``f`` of record ``k`` reports ``(k, f)``; no container is in two fields or
two records (:func:`owned_record` copies one that a tool put in a second place, looking only into the
containers the call changed), so the fields a call reports are every field whose stored form can have
changed.

What bypasses Python's method lookup is not seen: ``dict.__setitem__(record, k, v)`` called on the class
itself, and C code that appends to any ``list`` subclass directly (``heapq``). τ-bench's tools use neither.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any, SupportsIndex

Cell = tuple[Callable[["Cell", Any], None], str, str, Any]
"""What a container reports when it changes: (the report function, collection, record key, field). The
field is the record's key the container is under, ``None`` for the record's own dict (a change that may
touch any field: ``clear()``, ``update()``). Every container under one field holds one cell. The report
function gets the cell and the container about to change (the record's own dict when a field is set,
deleted or, with field ``None``, anything else done to the record)."""
Report = Callable[[Cell, Any], None]


class TrackedDict(dict[str, Any]):
    """A dict inside a record: reports its :data:`Cell` before each change."""

    __slots__ = ("_cell",)
    _cell: Cell

    def __setitem__(self, key: str, value: Any) -> None:
        self._cell[0](self._cell, self)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self._cell[0](self._cell, self)
        dict.__delitem__(self, key)

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[override,misc]
        self._cell[0](self._cell, self)
        dict.update(self, other)
        return self

    def clear(self) -> None:
        self._cell[0](self._cell, self)
        dict.clear(self)

    def pop(self, *args: Any) -> Any:
        self._cell[0](self._cell, self)
        return dict.pop(self, *args)

    def popitem(self) -> tuple[str, Any]:
        self._cell[0](self._cell, self)
        return dict.popitem(self)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self._cell[0](self._cell, self)
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._cell[0](self._cell, self)
        dict.update(self, *args, **kwargs)

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class TrackedList(list[Any]):
    """A list inside a record: reports its :data:`Cell` before each change."""

    __slots__ = ("_cell",)
    _cell: Cell

    def __setitem__(self, index: Any, value: Any) -> None:
        self._cell[0](self._cell, self)
        list.__setitem__(self, index, value)

    def __delitem__(self, index: Any) -> None:
        self._cell[0](self._cell, self)
        list.__delitem__(self, index)

    def __iadd__(self, other: Iterable[Any]) -> TrackedList:  # type: ignore[override,misc]
        self._cell[0](self._cell, self)
        list.extend(self, other)
        return self

    def __imul__(self, n: SupportsIndex) -> TrackedList:  # type: ignore[override,misc]
        self._cell[0](self._cell, self)
        return list.__imul__(self, n)  # type: ignore[return-value]

    def append(self, value: Any) -> None:
        self._cell[0](self._cell, self)
        list.append(self, value)

    def extend(self, values: Iterable[Any]) -> None:
        self._cell[0](self._cell, self)
        list.extend(self, values)

    def insert(self, index: SupportsIndex, value: Any) -> None:
        self._cell[0](self._cell, self)
        list.insert(self, index, value)

    def pop(self, index: SupportsIndex = -1) -> Any:
        self._cell[0](self._cell, self)
        return list.pop(self, index)

    def remove(self, value: Any) -> None:
        self._cell[0](self._cell, self)
        list.remove(self, value)

    def clear(self) -> None:
        self._cell[0](self._cell, self)
        list.clear(self)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._cell[0](self._cell, self)
        list.sort(self, *args, **kwargs)

    def reverse(self) -> None:
        self._cell[0](self._cell, self)
        list.reverse(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (list, (list(self),))


class TrackedRecord(TrackedDict):
    """A record's own dict: a key set or deleted reports that field alone; what may touch several fields
    (``clear``, ``update``, ``popitem``, ``|=``) reports the whole record."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any) -> None:
        cell = self._cell
        cell[0]((cell[0], cell[1], cell[2], key), self)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        cell = self._cell
        cell[0]((cell[0], cell[1], cell[2], key), self)
        dict.__delitem__(self, key)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            cell = self._cell
            cell[0]((cell[0], cell[1], cell[2], key), self)
        return dict.pop(self, key, *default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            cell = self._cell
            cell[0]((cell[0], cell[1], cell[2], key), self)
        return dict.setdefault(self, key, default)


def tracked(value: Any, cell: Cell) -> Any:
    """A copy of ``value`` whose dicts and lists (any subclass, tracked or not) all report ``cell``; other
    values are shared (strings, numbers and whatever else a tool stored: a tuple stays a tuple)."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, dict):
        out = TrackedDict({k: v if type(v) in _SCALARS else tracked(v, cell) for k, v in value.items()})
        out._cell = cell  # dict's own init above: no reports
        return out
    if isinstance(value, list):
        items = TrackedList([v if type(v) in _SCALARS else tracked(v, cell) for v in value])
        items._cell = cell
        return items
    return value


def record(value: Any, report: Report, name: str, key: str) -> TrackedRecord:
    """A copy of record ``value`` (a dict) of collection ``name`` at ``key``: a :class:`TrackedRecord` whose
    fields' containers report their field."""
    out = TrackedRecord({f: v if type(v) in _SCALARS else tracked(v, (report, name, key, f))
                         for f, v in value.items()})
    out._cell = (report, name, key, None)
    return out


_SCALARS = frozenset({str, int, float, bool, type(None)})


def owned(value: Any, cell: Cell) -> Any:
    """``value`` with every dict and list reporting ``cell``, copying as little as it can: the containers
    that already report the same record and field are kept; anything else is copied with
    :func:`tracked` — plain ones a tool made, and containers of other records or fields, so no two places
    share a container."""
    kind = type(value)
    if kind is not TrackedDict and kind is not TrackedList:
        return tracked(value, cell)
    mine = value._cell
    if mine[3] != cell[3] or mine[2] != cell[2] or mine[1] != cell[1]:
        return tracked(value, cell)
    if kind is TrackedDict:
        for k, v in dict.items(value):
            if type(v) not in _SCALARS:
                new = owned(v, cell)
                if new is not v:
                    dict.__setitem__(value, k, new)
    else:
        for i, v in enumerate(value):
            if type(v) not in _SCALARS:
                new = owned(v, cell)
                if new is not v:
                    list.__setitem__(value, i, new)
    return value


def owned_record(value: Any, report: Report, name: str, key: str,
                 changes: Mapping[Any, Mapping[int, Any] | None] | None) -> TrackedRecord:
    """Record ``value`` of collection ``name`` at ``key`` after a call changed it: kept if it is that record's
    own dict, else copied. ``changes``: per field, the containers of it the call changed (by ``id``), or
    ``None`` for a field it set (the field's value is checked with :func:`owned`); ``None``: any field.

    Only a changed container can have been given a value from elsewhere (every way of putting one in
    reports), so a field changed inside is fixed by looking at the children of its changed containers
    alone: a plain container or another field's is copied (:func:`tracked`), one of the same field kept."""
    if type(value) is not TrackedRecord or value._cell[2] != key or value._cell[1] != name:
        return record(value, report, name, key)
    if changes is None:
        changes = dict.fromkeys(dict.keys(value))
    for field, containers in changes.items():
        cell = (report, name, key, field)
        if containers is None:
            v = dict.get(value, field)
            if type(v) not in _SCALARS:
                new = owned(v, cell)
                if new is not v:
                    dict.__setitem__(value, field, new)
        else:
            for container in containers.values():
                _adopt_children(container, cell)
    return value


def _adopt_children(container: Any, cell: Cell) -> None:
    """Make every child container of ``container`` (a container of field ``cell``) one of that field's."""
    if type(container) is TrackedDict:
        for k, v in dict.items(container):
            if type(v) not in _SCALARS and not _of(v, cell):
                dict.__setitem__(container, k, tracked(v, cell))
    elif type(container) is TrackedList:
        for i, v in enumerate(container):
            if type(v) not in _SCALARS and not _of(v, cell):
                list.__setitem__(container, i, tracked(v, cell))


def _of(value: Any, cell: Cell) -> bool:
    """``value`` is a tracked container of the field of ``cell``."""
    kind = type(value)
    if kind is not TrackedDict and kind is not TrackedList:
        return False
    mine = value._cell
    return mine is cell or (mine[3] == cell[3] and mine[2] == cell[2] and mine[1] == cell[1])


class TrackedTable(dict[str, Any]):
    """One collection (``data["orders"]``): a key → record dict that reports each key about to be set or
    taken out through ``report(collection, key, removes)``."""

    __slots__ = ("_name", "_report")

    def __init__(self, name: str, records: dict[str, Any], report: Callable[[str, str, bool], None]) -> None:
        dict.__init__(self, records)
        self._name, self._report = name, report

    def __setitem__(self, key: str, value: Any) -> None:
        self._report(self._name, key, False)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self._report(self._name, key, True)
        dict.__delitem__(self, key)

    def __ior__(self, other: Any) -> TrackedTable:  # type: ignore[override,misc]
        self.update(other)
        return self

    def clear(self) -> None:
        for key in list(self):
            self._report(self._name, key, True)
        dict.clear(self)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            self._report(self._name, key, True)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        if self:
            self._report(self._name, next(reversed(self)), True)
        return dict.popitem(self)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self._report(self._name, key, False)
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (dict, (dict(self),))


__all__ = ["Cell", "TrackedDict", "TrackedList", "TrackedRecord", "TrackedTable", "owned", "owned_record",
           "record", "tracked"]
