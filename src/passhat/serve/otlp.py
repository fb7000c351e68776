"""An OTLP/HTTP trace receiver per trial: usage from the agent's own GenAI spans.

An agent built on a framework usually emits OpenTelemetry spans for its model calls, with the GenAI
semantic conventions (``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
``gen_ai.request.model`` / ``gen_ai.response.model``). Pointing its exporter at the trial's ``otlp_url``
(``cmd:`` agents get ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and ``..._HEADERS`` set) records each such span
as a model call of the trial, so tokens, cost and cost per success work for agents passhat does not run
in-process. Both OTLP encodings are accepted: JSON, and protobuf when ``opentelemetry-proto`` is installed
(it comes with ``passhat[otel]``). Spans without token counts are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from passhat.episode import LimitExceeded
from passhat.serve.app import Receive, Scope, Send, read_body, send_json
from passhat.serve.endpoint import TrialEndpoint
from passhat.serve.protocol import ReportedUsage

INPUT_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens")
OUTPUT_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens")
MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model")
COST_KEYS = ("gen_ai.usage.cost", "llm.usage.cost")
"""Not a semantic convention yet, but several SDKs set one of these; otherwise cost comes from the price table."""


def _value(v: dict[str, Any]) -> Any:
    """An OTLP ``AnyValue`` (JSON mapping: ``intValue`` is a string in OTLP JSON)."""
    for key in ("stringValue", "boolValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    return None


def spans(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every span of an ``ExportTraceServiceRequest`` in its JSON mapping."""
    for resource in request.get("resourceSpans") or []:
        for scope in resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []:
            yield from scope.get("spans") or []


def usage_of(span: dict[str, Any]) -> ReportedUsage | None:
    """The model call a span describes, or ``None`` when it carries no token counts."""
    attrs = {a.get("key"): _value(a.get("value") or {}) for a in span.get("attributes") or []}

    def first(keys: tuple[str, ...]) -> Any:
        return next((attrs[k] for k in keys if attrs.get(k) is not None), None)

    inp, out = first(INPUT_KEYS), first(OUTPUT_KEYS)
    if inp is None and out is None:
        return None
    start, end = int(span.get("startTimeUnixNano") or 0), int(span.get("endTimeUnixNano") or 0)
    cost = first(COST_KEYS)
    return ReportedUsage(
        model=first(MODEL_KEYS), input_tokens=int(inp or 0), output_tokens=int(out or 0),
        cost=float(cost) if isinstance(cost, int | float) else None,
        latency_s=(end - start) / 1e9 if end > start > 0 else None,
    )


def decode(body: bytes, content_type: str) -> dict[str, Any]:
    """The request as its JSON mapping, from either OTLP encoding."""
    if "protobuf" in content_type:
        try:
            from google.protobuf.json_format import MessageToDict
            from google.protobuf.message import DecodeError
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        except ImportError as exc:
            raise ValueError("protobuf OTLP needs opentelemetry-proto (pip install 'passhat[otel]'); "
                             "or export OTLP as JSON") from exc
        message = ExportTraceServiceRequest()
        try:
            message.ParseFromString(body)
        except DecodeError as exc:  # not a ValueError: it used to escape as a 500 and a traceback
            raise ValueError(f"not a protobuf ExportTraceServiceRequest ({exc})") from exc
        return MessageToDict(message)  # type: ignore[no-any-return]
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("expected an ExportTraceServiceRequest object")
    return data


async def receive_traces(endpoint: TrialEndpoint, scope: Scope, receive: Receive, send: Send) -> None:
    """``POST /trials/{id}/otlp/v1/traces``: record the model calls among the spans."""
    if scope["method"] != "POST":
        await send_json(send, 405, {"error": "POST OTLP trace requests here"})
        return
    content_type = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"content-type"), "")
    body = await read_body(receive)
    try:
        request = decode(body, content_type)
        calls = [u for u in (usage_of(s) for s in spans(request)) if u is not None]
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:  # wrong shapes, or nested past the stack
        await send_json(send, 400, {"error": f"not an OTLP trace request: {type(exc).__name__}: {exc}"})
        return
    limit = None
    for usage in calls:
        try:
            endpoint.report_usage(usage)
        except LimitExceeded as exc:  # recorded; the trial is stopping for its cost budget
            limit = exc
    if "protobuf" in content_type:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/x-protobuf"), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
    else:
        await send_json(send, 200, {} if limit is None else {"partialSuccess": {"errorMessage": str(limit)}})


__all__ = ["decode", "receive_traces", "spans", "usage_of"]
