"""The fields a tool's result can hold, read from its return annotation.

A ``malformed`` fault corrupts one named field of a result; a name the result never holds corrupts
nothing, and the trial would still say the fault was injected. Where the tool declares its result
precisely — a ``TypedDict``, a pydantic model, a dataclass, or lists, tuples and unions of them — the
names are known before any trial and a misspelt ``field:`` is bad input. A result declared as ``dict``,
``dict[str, X]``, ``list[dict]``, ``Any`` or not at all could hold any name: then only the trial's own
result can tell (the boundary flags such a call ``fault_not_applied``).
"""

from __future__ import annotations

import collections.abc as abc
import dataclasses
import types
import typing
from typing import Any, Union, get_args, get_origin, get_type_hints

import typing_extensions
from pydantic import BaseModel
from typing_extensions import is_typeddict  # also knows typing_extensions.TypedDict (pydantic's, before 3.12)

OPEN = None
"""Returned when the annotation does not limit the names (``dict``, ``Any``, no annotation)."""
_WRAPPERS = {typing.Annotated, typing.Required, typing.NotRequired, typing_extensions.Required,
             typing_extensions.NotRequired, typing_extensions.ReadOnly}
_SEQUENCES = {list, tuple, set, frozenset, abc.Sequence, abc.Iterable, abc.Collection, abc.Set}
_SCALARS = {str, int, float, bool, bytes, type(None)}


def declared_fields(func: Any) -> frozenset[str] | None:
    """Every key that can appear, at any depth, in what ``func`` is annotated to return; ``None`` when the
    annotation leaves the names open. A scalar result (``str``, ``int``) holds none: ``frozenset()``."""
    try:
        hints = get_type_hints(func, include_extras=True)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve declares nothing usable
        return OPEN
    if "return" not in hints:
        return OPEN
    return _fields(hints["return"], set())


def _fields(tp: Any, seen: set[int]) -> frozenset[str] | None:
    if tp is Any or tp is object:
        return OPEN
    if tp in _SCALARS or tp is None:
        return frozenset()
    origin = get_origin(tp)
    if origin in _WRAPPERS:
        return _fields(get_args(tp)[0], seen)
    if origin is typing.Literal:
        return frozenset()
    if origin in (Union, types.UnionType):
        return _union(get_args(tp), seen)
    if origin in _SEQUENCES:
        args = [a for a in get_args(tp) if a is not Ellipsis]
        return _union(args, seen) if args else OPEN
    if origin in (dict, abc.Mapping):
        key, value = (get_args(tp) + (Any, Any))[:2]
        if get_origin(key) is not typing.Literal:
            return OPEN  # any string may be a key, so any field name may appear
        inner = _fields(value, seen)
        return None if inner is None else frozenset(map(str, get_args(key))) | inner
    if not isinstance(tp, type):
        return OPEN  # a type variable, a string that did not resolve, a generic we do not know
    if id(tp) in seen:
        return frozenset()  # a recursive type: its names are already counted
    seen = seen | {id(tp)}
    if is_typeddict(tp):
        members = get_type_hints(tp, include_extras=True)
    elif issubclass(tp, BaseModel):
        members = {name: f.annotation for name, f in tp.model_fields.items()}
    elif dataclasses.is_dataclass(tp):
        members = get_type_hints(tp, include_extras=True)
        members = {f.name: members.get(f.name, Any) for f in dataclasses.fields(tp)}
    else:
        return OPEN  # a bare dict or list, or a class the boundary would turn into text
    inner = _union(list(members.values()), seen)
    return None if inner is None else frozenset(members) | inner


def _union(options: list[Any] | tuple[Any, ...], seen: set[int]) -> frozenset[str] | None:
    out: frozenset[str] = frozenset()
    for option in options:
        names = _fields(option, seen)
        if names is None:
            return OPEN
        out |= names
    return out


def type_name(func: Any) -> str:
    """How the return annotation reads, for messages (``Approval``, ``list[Invoice]``)."""
    try:
        tp = get_type_hints(func).get("return")
    except Exception:  # noqa: BLE001
        return "?"
    return tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")


__all__ = ["declared_fields", "type_name"]
