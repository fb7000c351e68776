"""Upstream tools' JSON Schemas: checked once when the server lists them, then used on every call.

An upstream's schema is the server's contract, not something passhat generates, so it is checked with
a real JSON Schema validator (``jsonschema``, which the ``mcp`` SDK depends on; imported lazily). A
schema that is not valid JSON Schema is bad input before any trial, naming the server and the tool;
arguments that do not fit a valid one never reach the server (the agent gets ``invalid_arguments``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from passhat.errors import DomainError

ArgumentCheck = Callable[[Any], list[tuple[tuple[str | int, ...], str]]]
"""Checks one call's arguments: the problems as (path, message), empty when they fit."""


def argument_check(server: str, tool: str, schema: Any) -> ArgumentCheck:
    """A compiled checker for ``schema``; raises :class:`DomainError` when it is not a usable input schema."""
    where = f"upstream server {server!r}: tool {tool!r}: inputSchema"
    if not isinstance(schema, dict):
        raise DomainError(f"{where} is {type(schema).__name__}, not a JSON Schema object")
    if schema.get("type", "object") != "object":
        raise DomainError(f"{where}: type is {schema.get('type')!r}; MCP tool arguments are an object "
                          "(\"type\": \"object\")")
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for
    from referencing import Registry

    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise DomainError(f"{where} is not a valid JSON Schema at {path}: {exc.message}") from None
    # an empty registry: a "$ref" resolves inside the schema or to the bundled metaschemas, never by download
    validator = cls(schema, registry=Registry())
    try:  # a "$ref" that resolves nowhere surfaces only when validating: find it now, not in a trial
        list(validator.iter_errors({}))
    except Exception as exc:  # referencing.exceptions.Unresolvable and kin
        raise DomainError(f"{where}: {type(exc).__name__}: {exc}") from None

    def check(arguments: Any) -> list[tuple[tuple[str | int, ...], str]]:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
        return [(tuple(e.absolute_path), e.message) for e in errors]

    return check
