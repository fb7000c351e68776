"""OpenTelemetry traces (OTLP/JSON, GenAI semantic conventions) as production conversations.

Spans are grouped by trace id; one trace is one conversation. What is read from a trace:

- tool calls: spans with ``gen_ai.operation.name`` = ``execute_tool``, in start order — the tool from
  ``gen_ai.tool.name``, its arguments from ``gen_ai.tool.call.arguments`` (required: a call cannot be
  compared without them), its result from ``gen_ai.tool.call.result``; a span with status ERROR failed,
  with the status message as its error and ``error.type`` (or passhat's ``passhat.fault_kind``) saying how;
- messages: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` of the ``invoke_agent`` span, or else of
  the last ``chat`` span (its input holds the conversation so far, its output the reply): user and
  assistant text parts, in order;
- who the user was (``user.id``, ``enduser.id``), the fixture and domain (``passhat.fixture``,
  ``passhat.domain``), and the conversation's id (``gen_ai.conversation.id``, else the trace id).

Traces without any GenAI span (other services' spans in the same file) are skipped. ``passhat
export-otlp --file`` writes exactly this, so passhat's own trials round-trip.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from passhat.errors import UserError
from passhat.redaction import Redactor
from passhat.shadow.traces import ERROR_TYPES, Recorded, parse_conversation

GENAI_OPERATIONS = {"execute_tool", "invoke_agent", "chat", "create_agent", "generate_content", "text_completion"}
FAULT_KINDS = {"drop_response": "lost_response", "timeout": "timeout", "error": "unavailable"}
"""passhat's fault kinds (``passhat.fault_kind``) as the error types of the trace format."""
IDENTITY_KEYS = ("user.id", "enduser.id", "passhat.identity")


def is_otlp(data: Any) -> bool:
    """An ``ExportTraceServiceRequest`` in its JSON mapping."""
    return isinstance(data, dict) and "resourceSpans" in data


def _any(value: Any) -> Any:
    """An OTLP ``AnyValue`` (JSON mapping) as a Python value."""
    if not isinstance(value, dict):
        return None
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_any(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return {kv.get("key"): _any(kv.get("value")) for kv in (value["kvlistValue"] or {}).get("values") or []}
    return None


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    return {a.get("key"): _any(a.get("value")) for a in span.get("attributes") or [] if isinstance(a, dict)}


def _spans(request: dict[str, Any], where: str) -> list[dict[str, Any]]:
    resources = request.get("resourceSpans")
    if not isinstance(resources, list):
        raise UserError(f"{where}: resourceSpans: expected a list")
    out = []
    for i, resource in enumerate(resources):
        scopes = (resource or {}).get("scopeSpans") or (resource or {}).get("instrumentationLibrarySpans") or []
        for j, scope in enumerate(scopes):
            for k, span in enumerate((scope or {}).get("spans") or []):
                if not isinstance(span, dict) or not isinstance(span.get("traceId"), str) or not span["traceId"]:
                    raise UserError(f"{where}: resourceSpans.{i}.scopeSpans.{j}.spans.{k}.traceId: missing")
                out.append(span)
    return out


def _failed(span: dict[str, Any]) -> bool:
    code = (span.get("status") or {}).get("code")
    return code in (2, "2", "STATUS_CODE_ERROR")


def _json_attribute(attrs: dict[str, Any], key: str) -> Any:
    value = attrs.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _tool_turn(span: dict[str, Any], attrs: dict[str, Any], where: str) -> dict[str, Any]:
    here = f"{where}: span {span.get('spanId') or '?'}"
    name = attrs.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        raise UserError(f"{here}: gen_ai.tool.name: missing (an execute_tool span names its tool)")
    if "gen_ai.tool.call.arguments" not in attrs:
        raise UserError(f"{here}: gen_ai.tool.call.arguments: missing — a call is compared by its arguments; record "
                        "them (content capture on; `passhat export-otlp` without --no-content)")
    arguments = _json_attribute(attrs, "gen_ai.tool.call.arguments")
    if not isinstance(arguments, dict):
        raise UserError(f"{here}: gen_ai.tool.call.arguments: expected a JSON object, got {type(arguments).__name__} "
                        "(cut by an attribute size limit? `passhat export-otlp --file` writes them whole)")
    turn: dict[str, Any] = {"role": "tool", "name": name, "arguments": arguments}
    if not _failed(span):
        turn["result"] = _json_attribute(attrs, "gen_ai.tool.call.result")
        return turn
    kind = attrs.get("error.type")
    if attrs.get("passhat.fault_kind") in FAULT_KINDS:
        kind = FAULT_KINDS[attrs["passhat.fault_kind"]]
    elif attrs.get("passhat.committed") is True:
        kind = "lost_response"
    turn["error"] = (span.get("status") or {}).get("message") or str(attrs.get("error.type") or "error")
    turn["error_type"] = kind if kind in ERROR_TYPES else "refused"
    return turn


def _messages(value: Any) -> list[tuple[str, str]]:
    """(role, text) of GenAI-convention messages: ``[{role, parts: [{type: text, content}]}]`` (or ``content``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    out = []
    for m in value if isinstance(value, list) else []:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            continue
        parts = m.get("parts")
        if isinstance(parts, list):
            text = "\n".join(str(p.get("content")) for p in parts
                             if isinstance(p, dict) and p.get("type") == "text" and p.get("content") is not None)
        else:
            text = m.get("content") if isinstance(m.get("content"), str) else ""
        if text:
            out.append((m["role"], text))
    return out


def _conversation_spans(spans: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The span that holds the conversation's messages (the first invoke_agent span with messages, else the
    last chat span with some) and its attributes."""
    with_messages = [(s, a) for s, a in ((s, _attributes(s)) for s in spans) if "gen_ai.input.messages" in a]
    agents = [(s, a) for s, a in with_messages if a.get("gen_ai.operation.name") == "invoke_agent"]
    if agents:
        return min(agents, key=lambda sa: int(sa[0].get("startTimeUnixNano") or 0))
    chats = [(s, a) for s, a in with_messages if a.get("gen_ai.operation.name") == "chat"]
    return max(chats, key=lambda sa: int(sa[0].get("endTimeUnixNano") or 0)) if chats else None


def _conversation(trace_id: str, spans: list[dict[str, Any]], where: str) -> tuple[dict[str, Any], list[str | None]] | None:
    """The conversation mapping of one trace and the span of each turn; None for a trace without GenAI spans."""
    attrs = {id(s): _attributes(s) for s in spans}
    if not any(a.get("gen_ai.operation.name") in GENAI_OPERATIONS for a in attrs.values()):
        return None
    found = _conversation_spans(spans)
    if found is None:
        raise UserError(f"{where}: no user message: give gen_ai.input.messages on the invoke_agent (or chat) span "
                        "(content capture on; `passhat export-otlp` without --no-content)")
    holder, held = found
    said = _messages(held.get("gen_ai.input.messages"))
    replies = [text for role, text in _messages(held.get("gen_ai.output.messages")) if role == "assistant"]
    tools = sorted((s for s in spans if attrs[id(s)].get("gen_ai.operation.name") == "execute_tool"),
                   key=lambda s: (int(s.get("startTimeUnixNano") or 0), attrs[id(s)].get("passhat.step") or 0))
    turns = [{"role": role, "text": text} for role, text in said]
    turns += [_tool_turn(s, attrs[id(s)], where) for s in tools]
    turns += [{"role": "assistant", "text": text} for text in replies[-1:]]
    origin = ([holder.get("spanId")] * len(said) + [s.get("spanId") for s in tools]
              + [holder.get("spanId")] * len(replies[-1:]))

    def first(*keys: str) -> str | None:
        """The first non-empty text value of any of ``keys`` on any span of the trace."""
        for s in spans:
            for k in keys:
                value = attrs[id(s)].get(k)
                if isinstance(value, str) and value:
                    return value
        return None

    data: dict[str, Any] = {"id": first("gen_ai.conversation.id") or trace_id, "turns": turns}
    for field, keys in (("identity", IDENTITY_KEYS), ("fixture", ("passhat.fixture",)), ("domain", ("passhat.domain",))):
        value = first(*keys)
        if value is not None:
            data[field] = value
    return data, origin


def otlp_conversations(requests: Sequence[tuple[Any, str]], path: Path, redactor: Redactor) -> list[Recorded]:
    """The conversations of one file's trace requests (``(request, where)``), one per trace, in first-seen order."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for request, where in requests:
        for span in _spans(request, where):
            traces.setdefault(span["traceId"], []).append(span)
    out = []
    for trace_id, spans in traces.items():
        where = f"{path}: trace {trace_id}"
        found = _conversation(trace_id, spans, where)
        if found is not None:
            data, origin = found
            out.append(parse_conversation(data, where, redactor, origin))
    return out
