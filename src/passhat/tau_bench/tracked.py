"""Dicts and lists that say when they are changed, so a call re-encodes only the records it changed.

τ-bench's tools change records in place, deep inside (``user["payment_methods"][pm]["balance"] = …``).
Every dict and list of a record handed to a tool is a :class:`TrackedDict` or :class:`TrackedList`: a
plain ``dict`` / ``list`` (reads run at C speed, ``isinstance(x, dict)`` holds, ``json.dumps`` works)
whose mutating methods first report the record they belong to — its :data:`Cell` — to the call in
progress. A collection (``data["orders"]``) is a :class:`TrackedTable`, which reports the key it sets or
deletes. Copies are plain (``copy.deepcopy``, ``dict(x)``, ``x.copy()``, slices), so changing a copy
changes no record.

What bypasses Python's method lookup is not seen: ``dict.__setitem__(record, k, v)`` called on the class
itself, and C code that appends to any ``list`` subclass directly (``heapq``). τ-bench's tools use neither.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any, SupportsIndex

Cell = tuple[Callable[["Cell"], None], str, str, bool]
"""What a container reports when it changes: (the report function, collection, record key, whether the
record is the shared initial one). One cell per record: every container inside the record holds it."""


class TrackedDict(dict[str, Any]):
    """A record's dict: reports its :data:`Cell` before each change."""

    __slots__ = ("_cell",)
    _cell: Cell

    def __setitem__(self, key: str, value: Any) -> None:
        self._cell[0](self._cell)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self._cell[0](self._cell)
        dict.__delitem__(self, key)

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[override,misc]
        self._cell[0](self._cell)
        dict.update(self, other)
        return self

    def clear(self) -> None:
        self._cell[0](self._cell)
        dict.clear(self)

    def pop(self, *args: Any) -> Any:
        self._cell[0](self._cell)
        return dict.pop(self, *args)

    def popitem(self) -> tuple[str, Any]:
        self._cell[0](self._cell)
        return dict.popitem(self)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self._cell[0](self._cell)
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._cell[0](self._cell)
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
        self._cell[0](self._cell)
        list.__setitem__(self, index, value)

    def __delitem__(self, index: Any) -> None:
        self._cell[0](self._cell)
        list.__delitem__(self, index)

    def __iadd__(self, other: Iterable[Any]) -> TrackedList:  # type: ignore[override,misc]
        self._cell[0](self._cell)
        list.extend(self, other)
        return self

    def __imul__(self, n: SupportsIndex) -> TrackedList:  # type: ignore[override,misc]
        self._cell[0](self._cell)
        return list.__imul__(self, n)  # type: ignore[return-value]

    def append(self, value: Any) -> None:
        self._cell[0](self._cell)
        list.append(self, value)

    def extend(self, values: Iterable[Any]) -> None:
        self._cell[0](self._cell)
        list.extend(self, values)

    def insert(self, index: SupportsIndex, value: Any) -> None:
        self._cell[0](self._cell)
        list.insert(self, index, value)

    def pop(self, index: SupportsIndex = -1) -> Any:
        self._cell[0](self._cell)
        return list.pop(self, index)

    def remove(self, value: Any) -> None:
        self._cell[0](self._cell)
        list.remove(self, value)

    def clear(self) -> None:
        self._cell[0](self._cell)
        list.clear(self)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._cell[0](self._cell)
        list.sort(self, *args, **kwargs)

    def reverse(self) -> None:
        self._cell[0](self._cell)
        list.reverse(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (list, (list(self),))


def tracked(value: Any, cell: Cell) -> Any:
    """A copy of ``value`` whose dicts and lists (any subclass, tracked or not) all report ``cell``; other
    values are shared (strings, numbers and whatever else a tool stored: a tuple stays a tuple)."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, dict):
        out = TrackedDict({k: tracked(v, cell) for k, v in value.items()})  # dict's own init: no reports
        out._cell = cell
        return out
    if isinstance(value, list):
        items = TrackedList([tracked(v, cell) for v in value])
        items._cell = cell
        return items
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})


def owned(value: Any, cell: Cell) -> Any:
    """``value`` with every dict and list reporting ``cell``, copying as little as it can: the containers
    that already belong to the same record (same collection and key) are kept and relabelled; anything
    else is copied with :func:`tracked` — plain ones a tool made, and containers of other records, so no
    two records share a container."""
    kind = type(value)
    if kind is not TrackedDict and kind is not TrackedList:
        return tracked(value, cell)
    mine = value._cell
    if mine[1] != cell[1] or mine[2] != cell[2]:
        return tracked(value, cell)
    value._cell = cell
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


__all__ = ["Cell", "TrackedDict", "TrackedList", "TrackedTable", "owned", "tracked"]
