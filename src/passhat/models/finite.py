"""JSON has no NaN and no Infinity: every JSON passhat writes is refused whole by jq, ``JSON.parse``, Go and
Rust when it holds one, and pydantic's default (``null``) would silently lose that the number was undefined.

A value that is undefined is therefore written as ``null`` on purpose, where it is computed (and its field's
docstring says when), and every writer is strict: ``json.dumps(..., allow_nan=False)``, and the models of
passhat's files serialize a NaN as the word (``ser_json_inf_nan="constants"``) so that :func:`check_json_text`
sees it and refuses the file instead of writing a ``null`` nobody chose. A NaN reaching a writer is a
passhat bug (exit 70), never a file other tools cannot read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Literal

STRICT_FLOATS: Literal["constants"] = "constants"
"""The models' ``ser_json_inf_nan``: a NaN is written as the word, for :func:`check_json_text` to find."""


class NonFiniteNumberError(RuntimeError):
    """A NaN or an infinite number reached a JSON writer (a passhat bug: the writer refuses, not the reader)."""


def non_finite_field(value: Any, where: str = "") -> str | None:
    """The dotted path of the first NaN or infinite number in JSON-ready data (``timing.agent_s``,
    ``calls[2].seconds``), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "the value"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list | tuple) else ()
    for key, item in items:
        inner = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
        hit = non_finite_field(item, inner)
        if hit:
            return hit
    return None


def _refuse(data: Any, what: str) -> NonFiniteNumberError:
    field = non_finite_field(data) or "a number"
    return NonFiniteNumberError(f"{what}: {field} is not a finite number, and JSON has none (NaN and Infinity are "
                                "not JSON); passhat refuses to write it")


def dumps_strict(value: Any, what: str, **options: Any) -> str:
    """``json.dumps(value, allow_nan=False, **options)``, whose error names ``what`` and the field."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as exc:
        if "Out of range float values" not in str(exc):
            raise
        raise _refuse(value, what) from None


def check_json_text(text: str, data: Callable[[], Any], what: str) -> str:
    """``text`` (a model's JSON, NaN written as the word) when it holds no NaN or Infinity; otherwise
    :class:`NonFiniteNumberError` naming the field. The words inside a string are fine: only texts holding
    them are looked at again (``data()``, the same model as JSON-ready data), so the cost is a search."""
    if "NaN" in text or "Infinity" in text:
        dumps_strict(data(), what)
    return text
