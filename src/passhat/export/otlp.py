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

The OpenTelemetry packages are an optional extra (``pip install 'passhat[otel]'``), imported lazily.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from passhat import __version__
from passhat.errors import PasshatError
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


def export_trace_id(manifest: Mapping[str, Any], stored: str) -> int:
    """The exported 128-bit trace id: the stored one made unique to this run (see module docstring)."""
    run_key = f"{manifest['suite'].get('hash')}|{manifest.get('agent')}|{manifest.get('started_at')}|{manifest.get('seed')}"
    return int(hashlib.sha256(f"{run_key}|{stored}".encode()).hexdigest()[:32], 16) or 1


def _value(v: Any) -> Any:
    """An attribute value OTLP accepts: primitives as is (ints within int64), anything else as JSON."""
    if isinstance(v, bool | float | str):
        return v
    if isinstance(v, int):
        return v if -(2**63) <= v < 2**63 else str(v)
    text = json.dumps(v, ensure_ascii=False, default=str)
    return text if len(text) <= CONTENT_LIMIT else text[:CONTENT_LIMIT] + "…"


def _attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _value(v) for k, v in attrs.items() if v is not None}


def genai_attributes(span: Span, record: TrialRecord, agent: str, include_content: bool) -> tuple[str, dict[str, Any]]:
    """The exported name and attributes of one span: GenAI conventions where one applies, passhat.* for the rest."""
    attrs: dict[str, Any] = dict(span.attributes)
    name = span.name
    if span.kind in OPERATION:
        attrs["gen_ai.operation.name"] = OPERATION[span.kind]
    if span.kind == "agent":
        name = f"invoke_agent {agent}"
        attrs.update({"gen_ai.agent.name": agent, "gen_ai.usage.input_tokens": record.usage.input_tokens,
                      "gen_ai.usage.output_tokens": record.usage.output_tokens})
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
    elif span.kind == "trial":
        attrs.update({"passhat.outcome": record.outcome, "passhat.seed": str(record.seed), "passhat.trace_id": record.trace_id})
        if record.failure is not None:
            attrs.update({"passhat.failure.category": record.failure.category, "passhat.failure.step": record.failure.step,
                          "passhat.failure.evidence": record.failure.evidence})
    if record.failure is not None and record.failure.step is not None and attrs.get("passhat.step") == record.failure.step:
        attrs["passhat.failure.category"] = record.failure.category
    return name, _attributes(attrs)


def fallback_spans(record: TrialRecord) -> list[Span]:
    """A record without spans (an infrastructure error) still exports as one root span."""
    span_id = hashlib.sha256(f"{record.case_id}|{record.trial}|{record.seed}".encode()).hexdigest()[:16]
    return [Span(span_id=span_id, name=f"trial {record.case_id}",
                 kind="trial", start_s=0.0, end_s=record.timing.total_s, status="error" if record.outcome == "error" else "ok",
                 error=(record.error or "").strip().splitlines()[-1] if record.error else None,
                 attributes={"passhat.case_id": record.case_id, "passhat.trial": record.trial,
                             "passhat.end_reason": record.end_reason})]


def record_spans(record: TrialRecord, manifest: Mapping[str, Any], resource: Any, include_content: bool = True) -> list[Any]:
    """One trial as OpenTelemetry ``ReadableSpan`` objects with the stored ids, links and times."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    trace_id = export_trace_id(manifest, record.trace_id or str(record.seed))
    start_ns = int(datetime.fromisoformat(record.timing.started_at).timestamp() * 1_000_000) * 1000
    scope = InstrumentationScope("passhat", __version__)
    agent = str(manifest.get("agent", "agent"))

    def context(span_id: str) -> Any:
        return SpanContext(trace_id, int(span_id, 16), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    out = []
    for span in record.spans or fallback_spans(record):
        name, attrs = genai_attributes(span, record, agent, include_content)
        status = Status(StatusCode.ERROR, span.error) if span.status == "error" else Status(StatusCode.UNSET)
        out.append(ReadableSpan(
            name=name, context=context(span.span_id), parent=context(span.parent_id) if span.parent_id else None,
            resource=resource, attributes=attrs, kind=SpanKind.CLIENT if span.kind == "model" else SpanKind.INTERNAL,
            status=status, start_time=start_ns + round(span.start_s * 1e9), end_time=start_ns + round(span.end_s * 1e9),
            instrumentation_scope=scope,
        ))
    return out


def export_records(records: Iterable[TrialRecord], manifest: Mapping[str, Any], endpoint: str, *, run_name: str = "",
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
                                "passhat.suite": manifest["suite"].get("name", ""), "passhat.agent": str(manifest.get("agent"))})
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


def export_run(folder: Path, endpoint: str, **options: Any) -> ExportStats:
    """Export the traces of every trial in a run folder (see ``export_records`` for the options)."""
    store = RunStore(Path(folder))
    return export_records(store.iter_records(), store.read_manifest(), endpoint, run_name=Path(folder).name, **options)
