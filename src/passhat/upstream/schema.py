"""Upstream tools' JSON Schemas: checked once when the server lists them, then used on every call.

An upstream's schema is the server's contract, not something passhat generates, so it is checked with a
real JSON Schema validator (:func:`passhat.tools.schema_tool.argument_check`; ``jsonschema``, which the
``mcp`` SDK depends on). A schema that is not valid JSON Schema is bad input before any trial, naming the
server and the tool; arguments that do not fit a valid one never reach the server (the agent gets
``invalid_arguments``).
"""

from __future__ import annotations

from typing import Any

from passhat.tools.schema_tool import ArgumentCheck
from passhat.tools.schema_tool import argument_check as schema_check


def argument_check(server: str, tool: str, schema: Any) -> ArgumentCheck:
    """A compiled checker for ``schema``; raises :class:`~passhat.errors.DomainError` naming the server and the
    tool when it is not a usable input schema."""
    return schema_check(f"upstream server {server!r}: tool {tool!r}: inputSchema", schema)
