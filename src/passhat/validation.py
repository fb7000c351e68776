"""Turning YAML and pydantic errors into "file: field: what is wrong" messages, the same way everywhere."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


def field_path(loc: tuple[Any, ...]) -> str:
    """``("rules", 2, "k")`` → ``rules.2.k`` (``(root)`` for the whole document)."""
    return ".".join(str(p) for p in loc) or "(root)"


def yaml_problem(exc: Exception) -> tuple[str, str]:
    """(where, message) for a YAML parse error: line and column when PyYAML knows them."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return where, f"invalid YAML: {getattr(exc, 'problem', None) or exc}"


def first_problem(exc: ValidationError) -> tuple[dict[str, Any], str, str]:
    """The first validation error, its field path, and a " (and N more problem(s))" suffix."""
    errors = exc.errors()
    first = dict(errors[0])
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return first, field_path(first["loc"]), more
