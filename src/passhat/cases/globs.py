"""Path globs of workspace assertions: ``tests``, ``src/**/*.py``, ``docs/?.md``.

Git's wildcard rules, which a coding team already knows: ``*`` and ``?`` never cross a ``/``, ``**``
spans any number of directories (none included), ``[abc]`` is a class, and a pattern that matches a
directory covers everything under it. Translated to a regular expression once per pattern; paths are
short, relative and use ``/``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any


def check_glob(pattern: str) -> str:
    """``pattern`` if it is a usable glob; ``ValueError`` naming it otherwise (relative, ``/``-separated)."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ValueError("a path glob is a non-empty string, e.g. `tests` or `src/**/*.py`")
    if pattern.startswith("/") or "\\" in pattern or "\0" in pattern:
        raise ValueError(f"path glob {pattern!r}: paths are relative to the workspace root and use `/`")
    if any(part == ".." for part in pattern.split("/")):
        raise ValueError(f"path glob {pattern!r}: `..` would leave the workspace")
    _compiled(pattern)
    return pattern


def check_globs(value: Any) -> Any:
    """A validator's helper: one glob or a list of them, each checked (other shapes are left to pydantic)."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        for pattern in value:
            check_glob(pattern)
    return value


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    parts = [p for p in pattern.strip("/").split("/") if p not in ("", ".")]
    out = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out += "(?:.*)" if last else "(?:[^/]+/)*"
            continue
        out += _segment(part) + ("" if last else "/")
    try:
        return re.compile(out + "(?:/.*)?")  # a matching directory covers what is under it
    except re.error as exc:
        raise ValueError(f"path glob {pattern!r}: {exc}") from None


def _segment(part: str) -> str:
    out, i = "", 0
    while i < len(part):
        c = part[i]
        if c == "*":
            while i + 1 < len(part) and part[i + 1] == "*":  # `a**b` inside a segment is one star
                i += 1
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            end = part.find("]", i + 2)
            if end == -1:
                out += re.escape(c)
            else:
                body = part[i + 1:end]
                out += "[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]"
                i = end
        else:
            out += re.escape(c)
        i += 1
    return out


def matches(path: str, patterns: Iterable[str]) -> bool:
    """Whether the relative path ``path`` is matched (or lies under a directory matched) by any pattern."""
    return any(_compiled(p).fullmatch(path) for p in patterns)
