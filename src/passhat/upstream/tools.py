"""Upstream tools as the tool boundary dispatches them: the same :class:`~passhat.tools.Tool`, so
permissions, ``allowed_tools``/``forbidden_tools``, planned faults and the trajectory record apply to
them exactly as to a native ``@tool``.

Two things differ. The arguments are checked against the server's own JSON Schema (schema.py) instead of
a model generated from type hints, as for every :class:`~passhat.tools.schema_tool.SchemaTool`: the check
runs in the argument model and hands the arguments on untouched. And the tool's body forwards the call to
the trial's server: bound per trial (:func:`bind`), as cassettes wrap external tools, because one domain
serves many trials.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from passhat.tools.context import PermissionDenied, ToolContext, ToolFailure
from passhat.tools.declare import Tool, ToolKind
from passhat.tools.schema_tool import ArgumentCheck, SchemaTool, argument_model


class UpstreamError(Exception):
    """The upstream server failed, not the tool's business logic: it crashed, hung, or answered
    something that is not MCP. The agent gets a tool error naming the server and the tool; the call is
    recorded with status ``exception``."""


Forward = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Sends one ``tools/call`` to the trial's server: (tool name, arguments) → the SDK's ``CallToolResult``."""


@dataclass(frozen=True)
class UpstreamTool(SchemaTool):
    """A tool an upstream MCP server listed (its ``input_schema`` is the server's, as listed)."""

    server: str = ""
    """The :class:`~passhat.upstream.Upstream`'s name."""
    output_schema: dict[str, Any] | None = None
    stable_description: str = ""
    """The description with the listing world's own values (its database's name, its folder) put back as
    placeholders: what the suite's hash covers (mcp-alchemy names the database it is connected to)."""


def upstream_tool(server: str, listed: Any, check: ArgumentCheck, *, kind: ToolKind, idempotent: bool,
                  listing_values: dict[str, str] | None = None) -> UpstreamTool:
    """An :class:`UpstreamTool` from one entry of ``tools/list`` (an ``mcp_types.Tool``)."""
    schema = dict(listed.input_schema)
    description = listed.description or listed.title or listed.name
    return UpstreamTool(
        name=listed.name, kind=kind, description=description, func=_outside_a_trial(server, listed.name),
        arguments=argument_model(listed.name, check), idempotent=idempotent, remote=True, server=server,
        input_schema=schema, output_schema=dict(listed.output_schema) if listed.output_schema else None,
        stable_description=_unplaced(description, listing_values or {}),
    )


def _unplaced(text: str, values: dict[str, str]) -> str:
    """``text`` with each world value (and a database URL's database name) back to its placeholder."""
    pairs = [(v, "{" + k + "}") for k, v in values.items() if v]
    url = values.get("database_url", "")
    name = url.split("?")[0].rsplit("/", 1)[-1] if "://" in url else ""
    if name:
        pairs.append((name, "{database_name}"))
    for value, mark in sorted(pairs, key=lambda p: -len(p[0])):  # the longest first: a URL before its name
        text = text.replace(value, mark)
    return text


def _outside_a_trial(server: str, tool: str) -> Callable[..., Awaitable[Any]]:
    async def unbound(ctx: ToolContext, arguments: dict[str, Any]) -> Any:
        raise UpstreamError(f"upstream server {server!r}: tool {tool!r} runs only inside a trial, on the "
                            "trial's own server (a reference call or a replay cannot reach it)")
    return unbound


def bind(tools: list[Tool], forwards: Mapping[str, Forward], denied: Mapping[str, re.Pattern[str]]) -> list[Tool]:
    """The trial's tools, each upstream tool forwarding to its server's connection for this trial."""
    out: list[Tool] = []
    for t in tools:
        if isinstance(t, UpstreamTool) and t.server in forwards:
            out.append(replace(t, func=_forwarding(t, forwards[t.server], denied[t.server])))
        else:
            out.append(t)
    return out


def _forwarding(tool: UpstreamTool, forward: Forward, denied: re.Pattern[str]) -> Callable[..., Awaitable[Any]]:
    async def call(ctx: ToolContext, arguments: dict[str, Any]) -> Any:
        result = await forward(tool.name, arguments)
        if result.is_error:
            text = error_text(result)
            m = denied.search(text)
            if m is not None:  # recorded as `denied`; the agent reads "permission denied: <the server's reason>"
                raise PermissionDenied(text[m.end():].strip() or text)
            raise ToolFailure(text)
        return result_data(result, tool.output_schema)
    return call


def error_text(result: Any) -> str:
    """The text of an ``isError`` result (its text parts joined), as the agent reads it."""
    parts = [getattr(c, "text", None) for c in result.content]
    return "\n".join(p for p in parts if p) or "error (the server gave no message)"


def result_data(result: Any, output_schema: dict[str, Any] | None) -> Any:
    """What the agent receives from a successful call, as JSON data.

    Structured content when the server sent it (the SDK's wrapper ``{"result": value}`` for a value
    that is not an object is unwrapped); otherwise the content parts: one text part is read as JSON when
    it is JSON, else kept as text; several parts become a list.
    """
    structured = result.structured_content
    if structured is not None:
        if _wraps_result(output_schema) and isinstance(structured, dict) and set(structured) == {"result"}:
            return structured["result"]
        return structured
    parts = [_part(c) for c in result.content]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else parts


def _wraps_result(schema: dict[str, Any] | None) -> bool:
    """The output schema the ``mcp`` SDK generates for a tool returning a list or a scalar: an object with
    one required property ``result``."""
    return schema is not None and set(schema.get("properties", {})) == {"result"} and schema.get("required") == ["result"]


def _part(content: Any) -> Any:
    text = getattr(content, "text", None)
    if getattr(content, "type", None) == "text" and isinstance(text, str):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack: the text as sent
            return text
    return content.model_dump(mode="json", by_alias=True, exclude_none=True)
