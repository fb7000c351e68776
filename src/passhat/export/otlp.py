"""Export a run's traces over OTLP/HTTP with the OpenTelemetry GenAI semantic conventions.

Each trial record already carries its span tree (``passhat.tracing``); this module replays it into
OpenTelemetry ``ReadableSpan`` objects — same span ids, same parent links, wall-clock times from
``timing.started_at`` plus each span's offset — and hands them to the OTLP/HTTP exporter, so runs show
up in Jaeger, Phoenix or Langfuse. Exporting from the stored records (not live) means the spans hold
exactly what the run folder holds: redacted values, and nothing an agent did not record.

Trace ids: the stored id derives from the trial seed, so two runs with the same ``--seed`` (say two
agents on one suite) would share trace ids and merge in a backend. The exported id therefore mixes in
the run's identity; the stored id stays searchable as ``passhat.trace_id``. Re-exporting one run gives
the same ids, so a backend deduplicates instead of doubling.

The agent span carries the conversation (``gen_ai.input.messages``, ``gen_ai.output.messages``) and the
root span whose it was (``user.id``), so a trace holds everything ``passhat shadow`` needs to replay it.
:func:`otlp_json` gives the same spans as OTLP/JSON, for files (``export-otlp --file``).

The OpenTelemetry packages are an optional extra (``pip install 'passhat[otel]'``), imported lazily; the
JSON encoding needs none of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from passhat import __version__
from passhat.episode import Message
from passhat.errors import PasshatError
from passhat.models import CaseMeta, Manifest
from passhat.models.finite import dumps_strict
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore
from passhat.tracing import Span

INSTALL_HINT = "OTLP export needs the optional OpenTelemetry packages: pip install 'passhat[otel]'"
CONTENT_LIMIT = 8192
"""Tool arguments and results are exported as JSON strings cut to this many characters."""
OPERATION = {"agent": "invoke_agent", "model": "chat", "tool": "execute_tool"}


class ExportError(PasshatError):
    """The traces could not be exported (extra not installed, endpoint unreachable or refusing)."""


@dataclass(frozen=True)
class ExportStats:
    traces: int
    spans: int
    endpoint: str


def traces_endpoint(url: str) -> str:
    """``http://host:4318`` → ``http://host:4318/v1/traces``; a URL with a path is used as given."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportError(f"--otlp {url!r}: expected an http(s) URL such as http://127.0.0.1:4318")
    return url.rstrip("/") + "/v1/traces" if parts.path in ("", "/") else url


def export_trace_id(manifest: Manifest, stored: str) -> int:
    """The exported 128-bit trace id: the stored one made unique to this run (see module docstring)."""
    run_key = f"{manifest.suite.hash}|{manifest.agent}|{manifest.started_at}|{manifest.seed}"
    return int(hashlib.sha256(f"{run_key}|{stored}".encode()).hexdigest()[:32], 16) or 1


def _value(v: Any, limit: int | None = CONTENT_LIMIT) -> Any:
    """An attribute value OTLP accepts: primitives as is (ints within int64), anything else as JSON (cut to
    ``limit`` characters; None: whole)."""
    if isinstance(v, bool | float | str):
        return v
    if isinstance(v, int):
        return v if -(2**63) <= v < 2**63 else str(v)
    text = dumps_strict(v, "an OTLP attribute", ensure_ascii=False, default=str)
    return text if limit is None or len(text) <= limit else text[:limit] + "…"


def _attributes(attrs: Mapping[str, Any], limit: int | None = CONTENT_LIMIT) -> dict[str, Any]:
    return {k: _value(v, limit) for k, v in attrs.items() if v is not None}


def _text_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Messages in the GenAI conventions' JSON shape (``gen_ai.input.messages``): role and text parts."""
    return [{"role": "user" if m.role == "user" else "assistant", "parts": [{"type": "text", "content": m.text}]}
            for m in messages]


def conversation_attributes(record: TrialRecord) -> dict[str, Any]:
    """The agent span's messages: what the user and the agent said before the final reply (input), and the
    final reply (output), so the conversation can be read back from the trace (``passhat shadow``)."""
    messages = list(record.messages)
    final = messages[-1] if messages and messages[-1].role == "agent" and messages[-1].text == record.reply else None
    attrs: dict[str, Any] = {"gen_ai.input.messages": _text_messages(messages[:-1] if final else messages)}
    if record.reply:
        attrs["gen_ai.output.messages"] = [{**_text_messages([Message(role="agent", text=record.reply)])[0],
                                            "finish_reason": "stop"}]
    return attrs


def genai_attributes(span: Span, record: TrialRecord, agent: str, include_content: bool,
                     meta: CaseMeta | None = None,
                     content_limit: int | None = CONTENT_LIMIT) -> tuple[str, dict[str, Any]]:
    """The exported name and attributes of one span: GenAI conventions where one applies, passhat.* for the rest.

    ``meta`` is the case's entry in the manifest (``suite.case_meta``): the root span says whose conversation it
    was (``user.id``) and on which fixture. JSON-valued attributes (arguments, results, messages) are cut to
    ``content_limit`` characters, as collectors limit attribute sizes (None: whole)."""
    attrs: dict[str, Any] = dict(span.attributes)
    name = span.name
    if span.kind in OPERATION:
        attrs["gen_ai.operation.name"] = OPERATION[span.kind]
    if span.kind == "agent":
        name = f"invoke_agent {agent}"
        attrs.update({"gen_ai.agent.name": agent, "gen_ai.usage.input_tokens": record.usage.input_tokens,
                      "gen_ai.usage.output_tokens": record.usage.output_tokens,
                      "gen_ai.conversation.id": f"{record.case_id}-t{record.trial}"})
        if include_content:
            attrs.update(conversation_attributes(record))
        if len(record.usage.models) == 1:
            attrs["gen_ai.request.model"] = record.usage.models[0]
        if ":" in agent and agent.split(":", 1)[0] in ("openai", "anthropic"):
            attrs["gen_ai.provider.name"] = agent.split(":", 1)[0]
    elif span.kind == "tool":
        step = attrs.get("passhat.step")
        attrs.update({"gen_ai.tool.type": "function", "gen_ai.tool.call.id": f"step-{step}"})
        call = next((c for c in record.calls if c.step == step), None)
        if call is not None and include_content:
            attrs.update({"gen_ai.tool.call.arguments": call.arguments, "gen_ai.tool.call.result": call.result})
        if call is not None and not call.ok:
            attrs["error.type"] = call.status
        if call is not None and call.fault_kind is not None:
            attrs["passhat.fault_kind"] = call.fault_kind
    elif span.kind == "trial":
        attrs.update({"passhat.outcome": record.outcome, "passhat.seed": str(record.seed), "passhat.trace_id": record.trace_id})
        if meta is not None:
            attrs.update({"user.id": meta.identity, "passhat.fixture": meta.fixture})
        if record.failure is not None:
            attrs.update({"passhat.failure.category": record.failure.category, "passhat.failure.step": record.failure.step,
                          "passhat.failure.evidence": record.failure.evidence})
    if record.failure is not None and record.failure.step is not None and attrs.get("passhat.step") == record.failure.step:
        attrs["passhat.failure.category"] = record.failure.category
    return name, _attributes(attrs, content_limit)


def fallback_spans(record: TrialRecord) -> list[Span]:
    """A record without spans (an infrastructure error) still exports as one root span."""
    span_id = hashlib.sha256(f"{record.case_id}|{record.trial}|{record.seed}".encode()).hexdigest()[:16]
    return [Span(span_id=span_id, name=f"trial {record.case_id}",
                 kind="trial", start_s=0.0, end_s=record.timing.total_s, status="error" if record.outcome == "error" else "ok",
                 error=(record.error or "").strip().splitlines()[-1] if record.error else None,
                 attributes={"passhat.case_id": record.case_id, "passhat.trial": record.trial,
                             "passhat.end_reason": record.end_reason})]


def record_spans(record: TrialRecord, manifest: Manifest, resource: Any, include_content: bool = True) -> list[Any]:
    """One trial as OpenTelemetry ``ReadableSpan`` objects with the stored ids, links and times."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    trace_id = export_trace_id(manifest, record.trace_id or str(record.seed))
    start_ns = int(datetime.fromisoformat(record.timing.started_at).timestamp() * 1_000_000) * 1000
    scope = InstrumentationScope("passhat", __version__)
    agent = manifest.agent

    def context(span_id: str) -> Any:
        return SpanContext(trace_id, int(span_id, 16), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    meta = manifest.suite.case_meta.get(record.case_id)
    out = []
    for span in record.spans or fallback_spans(record):
        name, attrs = genai_attributes(span, record, agent, include_content, meta)
        status = Status(StatusCode.ERROR, span.error) if span.status == "error" else Status(StatusCode.UNSET)
        out.append(ReadableSpan(
            name=name, context=context(span.span_id), parent=context(span.parent_id) if span.parent_id else None,
            resource=resource, attributes=attrs, kind=SpanKind.CLIENT if span.kind == "model" else SpanKind.INTERNAL,
            status=status, start_time=start_ns + round(span.start_s * 1e9), end_time=start_ns + round(span.end_s * 1e9),
            instrumentation_scope=scope,
        ))
    return out


def export_records(records: Iterable[TrialRecord], manifest: Manifest, endpoint: str, *, run_name: str = "",
                   headers: Mapping[str, str] | None = None, timeout: float = 10.0, include_content: bool = True,
                   batch_spans: int = 512) -> ExportStats:
    """Export every record's trace, whole traces per request; raises ``ExportError`` on the first refusal."""
    url = traces_endpoint(endpoint)
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import SpanExportResult
    except ImportError:
        raise ExportError(INSTALL_HINT) from None
    resource = Resource.create({"service.name": "passhat", "service.version": __version__, "passhat.run": run_name,
                                "passhat.suite": manifest.suite.name, "passhat.agent": manifest.agent})
    exporter = OTLPSpanExporter(endpoint=url, headers=dict(headers) if headers else None, timeout=timeout)
    traces = sent = 0
    pending: list[Any] = []

    def flush() -> None:
        nonlocal sent
        if pending and exporter.export(pending) is not SpanExportResult.SUCCESS:
            raise ExportError(f"OTLP endpoint {url} did not accept {len(pending)} span(s) "
                              f"({sent} sent before); is a collector listening there?")
        sent += len(pending)
        pending.clear()

    try:
        for record in records:
            pending.extend(record_spans(record, manifest, resource, include_content))
            traces += 1
            if len(pending) >= batch_spans:
                flush()
        flush()
    finally:
        exporter.shutdown()
    return ExportStats(traces=traces, spans=sent, endpoint=url)


def _any_value(v: Any) -> dict[str, Any]:
    """An attribute value in OTLP's JSON encoding (``intValue`` as a string, as the spec has it)."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def _key_values(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any_value(v)} for k, v in attrs.items()]


def otlp_json(record: TrialRecord, manifest: Manifest, *, run_name: str = "",
              include_content: bool = True) -> dict[str, Any]:
    """One trial as an OTLP/JSON ``ExportTraceServiceRequest``: the spans :func:`export_records` sends, with
    the same ids, names, times and attributes, in the JSON encoding (hex ids, nanosecond strings), with
    arguments, results and messages whole (a file has no attribute size limit).

    No OpenTelemetry package is needed. ``passhat export-otlp --file`` writes one per line (JSON Lines, as an
    OpenTelemetry Collector's file exporter does), and ``passhat shadow`` reads them back.
    """
    trace_id = f"{export_trace_id(manifest, record.trace_id or str(record.seed)):032x}"
    start_ns = int(datetime.fromisoformat(record.timing.started_at).timestamp() * 1_000_000) * 1000
    agent = manifest.agent
    meta = manifest.suite.case_meta.get(record.case_id)
    spans = []
    for span in record.spans or fallback_spans(record):
        name, attrs = genai_attributes(span, record, agent, include_content, meta, content_limit=None)
        out: dict[str, Any] = {
            "traceId": trace_id, "spanId": span.span_id, "name": name, "kind": 3 if span.kind == "model" else 1,
            "startTimeUnixNano": str(start_ns + round(span.start_s * 1e9)),
            "endTimeUnixNano": str(start_ns + round(span.end_s * 1e9)), "attributes": _key_values(attrs),
            "status": {"code": 2, "message": span.error or ""} if span.status == "error" else {},
        }
        if span.parent_id:
            out["parentSpanId"] = span.parent_id
        spans.append(out)
    resource = {"service.name": "passhat", "service.version": __version__, "passhat.run": run_name,
                "passhat.suite": manifest.suite.name, "passhat.agent": agent}
    return {"resourceSpans": [{"resource": {"attributes": _key_values(resource)},
                               "scopeSpans": [{"scope": {"name": "passhat", "version": __version__}, "spans": spans}]}]}


def write_run_json(folder: Path, file: Path, *, include_content: bool = True) -> int:
    """Write every trial of the run folder to ``file`` as OTLP/JSON, one trace per line, whole or not at all
    (a temporary file renamed into place); returns the number of traces."""
    store = RunStore(Path(folder))
    manifest = store.manifest()
    tmp = file.with_name(file.name + ".tmp")
    traces = 0
    try:
        with tmp.open("w", encoding="utf-8") as out:
            for record in store.iter_records():
                out.write(dumps_strict(otlp_json(record, manifest, run_name=Path(folder).name, include_content=include_content),
                                        f"{file}: case {record.case_id!r} trial {record.trial}", ensure_ascii=False) + "\n")
                traces += 1
        tmp.replace(file)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return traces


def export_run(folder: Path, endpoint: str, **options: Any) -> ExportStats:
    """Export the traces of every trial in a run folder (see ``export_records`` for the options)."""
    store = RunStore(Path(folder))
    return export_records(store.iter_records(), store.manifest(), endpoint, run_name=Path(folder).name, **options)
