"""OpenTelemetry traces (OTLP/JSON, GenAI semantic conventions) as production conversations.

Spans are grouped by trace id; one trace is one conversation. What is read from a trace:

- tool calls: spans with ``gen_ai.operation.name`` = ``execute_tool``, in start order — the tool from
  ``gen_ai.tool.name``, its arguments from ``gen_ai.tool.call.arguments`` (required: a call cannot be
  compared without them), its result from ``gen_ai.tool.call.result``; a span with status ERROR failed,
  with the status message as its error and ``error.type`` (or passhat's ``passhat.fault_kind``) saying how;
- messages: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` of the ``invoke_agent`` span, or else of
  the last ``chat`` span (its input holds the conversation so far, its output the reply): user and
  assistant text parts, in order. Where a span carries them in a span event instead (the conventions'
  ``gen_ai.client.inference.operation.details`` event, or the older ``gen_ai.content.prompt`` /
  ``gen_ai.content.completion`` events with ``gen_ai.prompt`` / ``gen_ai.completion``), they are read there;
- who the user was (``user.id``, ``enduser.id``), the fixture and domain (``passhat.fixture``,
  ``passhat.domain``), and the conversation's id (``gen_ai.conversation.id``, else the trace id).

Traces without any GenAI span (other services' spans in the same file) are skipped. ``passhat
export-otlp --file`` writes exactly this, so passhat's own trials round-trip. A span delivered twice (the
same trace and span id) is read once. Values come in OTLP's JSON encoding, where an ``intValue`` is a string
of digits (so a numeric ``user.id`` is read as its digits); trace and span ids are redacted like any value
before a message or a file names them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from passhat.errors import PasshatError
from passhat.inputs import loads_nested
from passhat.redaction import Redactor
from passhat.shadow.traces import ERROR_TYPES, Recorded, parse_conversation

GENAI_OPERATIONS = {"execute_tool", "invoke_agent", "chat", "create_agent", "generate_content", "text_completion"}
FAULT_KINDS = {"drop_response": "lost_response", "timeout": "timeout", "error": "unavailable"}
"""passhat's fault kinds (``passhat.fault_kind``) as the error types of the trace format."""
IDENTITY_KEYS = ("user.id", "enduser.id", "passhat.identity")
MESSAGE_KEYS = (("gen_ai.input.messages", "gen_ai.input.messages"), ("gen_ai.output.messages", "gen_ai.output.messages"),
                ("gen_ai.prompt", "gen_ai.input.messages"), ("gen_ai.completion", "gen_ai.output.messages"))
"""(where messages may be, what they are): the conventions' attributes, and the older events' ``gen_ai.prompt`` /
``gen_ai.completion`` (JSON lists of ``{role, content}``)."""


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
    if "intValue" in value:  # int64 is a string in OTLP/JSON
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [_any(v) for v in _values(value["arrayValue"])]
    if "kvlistValue" in value:
        return {str(kv.get("key")): _any(kv.get("value")) for kv in _values(value["kvlistValue"]) if isinstance(kv, dict)}
    return None


def _values(holder: Any) -> list[Any]:
    """The ``values`` of an ``ArrayValue``/``KeyValueList``; nothing when the exporter wrote something else."""
    values = holder.get("values") if isinstance(holder, dict) else None
    return values if isinstance(values, list) else []


def _key_values(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {str(a.get("key")): _any(a.get("value")) for a in items if isinstance(a, dict)}


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    """The span's attributes, with the conversation's messages found in its events when not among them."""
    attrs = _key_values(span.get("attributes"))
    held = [attrs] + [_key_values(e.get("attributes")) for e in span.get("events") or [] if isinstance(e, dict)]
    for source in held:
        for key, meaning in MESSAGE_KEYS:
            if key in source:
                attrs.setdefault(meaning, source[key])
    return attrs


def _spans(request: dict[str, Any], where: str) -> list[dict[str, Any]]:
    resources = request.get("resourceSpans")
    if not isinstance(resources, list):
        raise PasshatError(f"{where}: resourceSpans: expected a list")
    out = []
    for i, resource in enumerate(resources):
        if not isinstance(resource, dict):
            raise PasshatError(f"{where}: resourceSpans.{i}: expected an object")
        scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []
        for j, scope in enumerate(scopes if isinstance(scopes, list) else []):
            spans = scope.get("spans") if isinstance(scope, dict) else None
            for k, span in enumerate(spans if isinstance(spans, list) else []):
                if not isinstance(span, dict) or not isinstance(span.get("traceId"), str) or not span["traceId"]:
                    raise PasshatError(f"{where}: resourceSpans.{i}.scopeSpans.{j}.spans.{k}.traceId: missing")
                out.append(span)
    return out


def _status(span: dict[str, Any]) -> dict[str, Any]:
    status = span.get("status")
    return status if isinstance(status, dict) else {}


def _failed(span: dict[str, Any]) -> bool:
    return _status(span).get("code") in (2, "2", "STATUS_CODE_ERROR")


def _nanos(span: dict[str, Any], key: str, where: str) -> int:
    """A span's time (``startTimeUnixNano``: a string of digits in OTLP/JSON, or a number); 0 when absent."""
    value = span.get(key)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        raise PasshatError(f"{where}: {key}: expected nanoseconds since the epoch (a string of digits), "
                        f"got a {type(value).__name__} that is not one") from None


def _step(attrs: dict[str, Any]) -> int:
    """``passhat.step``, which orders tool spans that start in the same nanosecond (0 when absent or not a number)."""
    value = attrs.get("passhat.step")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _json_attribute(attrs: dict[str, Any], key: str) -> Any:
    value = attrs.get(key)
    if isinstance(value, str):
        try:
            return loads_nested(value, f"attribute {key}")
        except json.JSONDecodeError:
            return value
    return value


def _tool_turn(span: dict[str, Any], attrs: dict[str, Any], here: str) -> dict[str, Any]:
    name = attrs.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        raise PasshatError(f"{here}: gen_ai.tool.name: missing (an execute_tool span names its tool)")
    if "gen_ai.tool.call.arguments" not in attrs:
        raise PasshatError(f"{here}: gen_ai.tool.call.arguments: missing — a call is compared by its arguments; record "
                        "them (content capture on; `passhat export-otlp` without --no-content)")
    arguments = _json_attribute(attrs, "gen_ai.tool.call.arguments")
    if not isinstance(arguments, dict):
        raise PasshatError(f"{here}: gen_ai.tool.call.arguments: expected a JSON object, got {type(arguments).__name__} "
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
    turn["error"] = str(_status(span).get("message") or attrs.get("error.type") or "error")
    turn["error_type"] = kind if kind in ERROR_TYPES else "refused"
    return turn


def _messages(value: Any) -> list[tuple[str, str]]:
    """(role, text) of GenAI-convention messages: ``[{role, parts: [{type: text, content}]}]`` (or ``content``)."""
    if isinstance(value, str):
        try:
            value = loads_nested(value, "a messages attribute")
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
            content = m.get("content")
            text = content if isinstance(content, str) else ""
        if text:
            out.append((m["role"], text))
    return out


def _conversation(trace_id: str, spans: list[dict[str, Any]], where: str,
                  span_name: Callable[[dict[str, Any]], str]) -> tuple[dict[str, Any], list[str]] | None:
    """The conversation mapping of one trace and the span of each turn; None for a trace without GenAI spans.
    ``span_name`` names a span in messages (its id, redacted)."""
    attrs = {id(s): _attributes(s) for s in spans}
    if not any(a.get("gen_ai.operation.name") in GENAI_OPERATIONS for a in attrs.values()):
        return None
    at = {id(s): f"{where}: span {span_name(s)}" for s in spans}
    start = {id(s): _nanos(s, "startTimeUnixNano", at[id(s)]) for s in spans}
    # the messages: the first invoke_agent span that has them, else the last chat span that does
    with_messages = [s for s in spans if "gen_ai.input.messages" in attrs[id(s)]]
    agents = [s for s in with_messages if attrs[id(s)].get("gen_ai.operation.name") == "invoke_agent"]
    chats = [s for s in with_messages if attrs[id(s)].get("gen_ai.operation.name") == "chat"]
    if agents:
        holder = min(agents, key=lambda s: start[id(s)])
    elif chats:
        holder = max(chats, key=lambda s: _nanos(s, "endTimeUnixNano", at[id(s)]))
    else:
        names = {str(e.get("name")) for s in spans for e in s.get("events") or [] if isinstance(e, dict)}
        events = sorted(n for n in names if n.startswith("gen_ai.") and n.endswith(".message"))
        hint = (f"; its messages are in per-message events ({', '.join(events)}), which carry no text on a span"
                if events else "")
        raise PasshatError(f"{where}: no user message: give gen_ai.input.messages on the invoke_agent (or chat) span, "
                        f"or in its gen_ai.client.inference.operation.details event{hint} (content capture on; "
                        "`passhat export-otlp` without --no-content)")
    held = attrs[id(holder)]
    said = _messages(held.get("gen_ai.input.messages"))
    replies = [text for role, text in _messages(held.get("gen_ai.output.messages")) if role == "assistant"]
    tools = sorted((s for s in spans if attrs[id(s)].get("gen_ai.operation.name") == "execute_tool"),
                   key=lambda s: (start[id(s)], _step(attrs[id(s)])))
    turns = [{"role": role, "text": text} for role, text in said]
    turns += [_tool_turn(s, attrs[id(s)], at[id(s)]) for s in tools]
    turns += [{"role": "assistant", "text": text} for text in replies[-1:]]
    origin = [span_name(holder)] * len(said) + [span_name(s) for s in tools] + [span_name(holder)] * len(replies[-1:])

    def first(*keys: str) -> str | None:
        """The first non-empty text (or integer, as its digits) value of any of ``keys`` on any span of the trace."""
        for s in spans:
            for k in keys:
                value = attrs[id(s)].get(k)
                if isinstance(value, int) and not isinstance(value, bool):
                    return str(value)
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
    """The conversations of one file's trace requests (``(request, where)``), one per trace, in first-seen order.

    A span that comes again (the same trace and span id: a collector that retried an export delivers it twice)
    is read once; otherwise a tool call would read as production making the same write twice."""
    traces: dict[str, list[dict[str, Any]]] = {}
    seen: set[tuple[str, str]] = set()
    for request, where in requests:
        for span in _spans(request, where):
            span_id = span.get("spanId")
            if isinstance(span_id, str) and span_id:
                if (span["traceId"], span_id) in seen:
                    continue
                seen.add((span["traceId"], span_id))
            traces.setdefault(span["traceId"], []).append(span)
    out = []
    for trace_id, spans in traces.items():
        where = f"{path}: trace {redactor.text(trace_id)}"
        found = _conversation(trace_id, spans, where, lambda s: redactor.text(str(s.get("spanId") or "?")))
        if found is not None:
            data, origin = found
            out.append(parse_conversation(data, where, redactor, origin))
    return out
