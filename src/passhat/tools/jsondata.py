"""Whatever an agent passes as tool arguments, as plain JSON data.

Over HTTP or MCP arguments are JSON by construction; an in-process agent can pass anything: numpy
scalars, custom objects, dicts with mixed-type keys, cyclic structures, integers too long to print.
Recording such a value used to crash the grader or the writer of ``trials.jsonl`` — turning the agent's
mistake into an excluded ``error`` or aborting the run. The boundary converts arguments once, so the
record, the validation and every grader see JSON data: numpy scalars become the numbers they hold (as
on the wire), anything else becomes a descriptive string that strict validation then refuses.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 64
MAX_INT_BITS = 12_000
"""About 3,600 digits: below Python's 4,300-digit limit on int → str conversion, which raises."""

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 80


def as_json_data(value: Any) -> Any:
    """``value`` as JSON data (dicts with string keys, lists, strings, finite numbers, booleans, None)."""
    if type(value) is dict and all(type(k) is str and _plain_scalar(v) for k, v in value.items()):
        return dict(value)  # the usual arguments: a flat object of plain values, copied as _walk would
    return _walk(value, 0, set())


def _plain_scalar(v: Any) -> bool:
    """``v`` is a value :func:`_walk` would return unchanged (exact types only: a subclass is converted)."""
    kind = type(v)
    if kind is str or kind is bool or v is None:
        return True
    if kind is int:
        return v.bit_length() <= MAX_INT_BITS  # type: ignore[no-any-return]
    return kind is float and math.isfinite(v)


def _walk(value: Any, depth: int, path: set[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value) if value.bit_length() <= MAX_INT_BITS else f"<integer of {value.bit_length()} bits>"
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    if depth >= MAX_DEPTH:
        return f"<nested deeper than {MAX_DEPTH} levels>"
    if isinstance(value, Mapping | list | tuple):
        if id(value) in path:
            return "<cycle>"
        path.add(id(value))
        try:
            if isinstance(value, Mapping):
                return {_key(k): _walk(v, depth + 1, path) for k, v in value.items()}
            return [_walk(v, depth + 1, path) for v in value]
        finally:
            path.discard(id(value))
    if type(value).__module__ == "numpy" and callable(getattr(value, "item", None)):
        try:
            return _walk(value.item(), depth + 1, path)
        except Exception:  # noqa: BLE001 - a strange scalar is described below like any object
            pass
    return f"<{type(value).__name__} {_repr.repr(value)}>"


def _key(key: Any) -> str:
    if isinstance(key, str):
        return str(key)
    plain = _walk(key, MAX_DEPTH - 1, set())
    return plain if isinstance(plain, str) else str(plain).lower() if isinstance(plain, bool) else str(plain)


__all__ = ["as_json_data"]
