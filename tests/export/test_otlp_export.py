"""OTLP/HTTP export received by a local collector stand-in: ids, parent links, times and GenAI attributes intact."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs the otel extra: pip install 'passhat[otel]'")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from passhat.export import ExportError, export_run, traces_endpoint  # noqa: E402
from passhat.export.otlp import export_trace_id  # noqa: E402
from passhat.models import Manifest  # noqa: E402


class Receiver:
    """Accepts POST /v1/traces (protobuf, optionally gzip) and keeps every span with its resource."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, Any], Any]] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.paths.append(self.path)
                request = ExportTraceServiceRequest.FromString(body)
                for rs in request.resource_spans:
                    resource = {a.key: a.value.string_value for a in rs.resource.attributes}
                    receiver.spans.extend((resource, s) for ss in rs.scope_spans for s in ss.spans)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def traces(self) -> dict[bytes, list[Any]]:
        out: dict[bytes, list[Any]] = {}
        for _, span in self.spans:
            out.setdefault(span.trace_id, []).append(span)
        return out


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    thread = threading.Thread(target=r.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


@pytest.fixture(scope="module")
def hasty_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("otlp") / "hasty"
    r = CliRunner().invoke(main, ["run", "reimbursement", "--agent", "hasty", "--trials", "2", "--out", str(out),
                                  "-q", "--no-report", "--no-sanity"])
    assert r.exit_code == 0, r.output
    return out


def attrs(span: Any) -> dict[str, Any]:
    out = {}
    for a in span.attributes:
        v = a.value
        out[a.key] = getattr(v, v.WhichOneof("value"))
    return out


def records(run: Path) -> dict[tuple[str, int], dict[str, Any]]:
    rows = [json.loads(line) for line in (run / "trials.jsonl").read_text("utf-8").splitlines()]
    return {(r["case_id"], r["trial"]): r for r in rows}


def test_every_trial_arrives_as_one_tree_with_stored_ids_and_times(hasty_run: Path, receiver: Receiver) -> None:
    stats = export_run(hasty_run, receiver.url)
    stored = records(hasty_run)
    traces = receiver.traces()
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    assert stats.traces == len(traces) == len(stored) == 38
    assert stats.spans == len(receiver.spans) == sum(len(r["spans"]) for r in stored.values())
    assert {res["service.name"] for res, _ in receiver.spans} == {"passhat"}
    for spans in traces.values():
        by_id = {s.span_id: s for s in spans}
        roots = [s for s in spans if not s.parent_span_id]
        assert len(roots) == 1 and roots[0].name.startswith("trial ")
        assert all(s.parent_span_id in by_id for s in spans if s.parent_span_id), "every parent is in the trace"
        root = attrs(roots[0])
        record = stored[(root["passhat.case_id"], root["passhat.trial"])]
        assert {s.span_id.hex() for s in spans} == {s["span_id"] for s in record["spans"]}
        parents = {s["span_id"]: s["parent_id"] for s in record["spans"]}
        assert all((s.parent_span_id.hex() or None) == parents[s.span_id.hex()] for s in spans)
        agent = [s for s in spans if attrs(s).get("gen_ai.operation.name") == "invoke_agent"]
        assert len(agent) == 1 and agent[0].parent_span_id == roots[0].span_id and agent[0].name == "invoke_agent hasty"
        tools = sorted((s for s in spans if attrs(s).get("gen_ai.operation.name") == "execute_tool"),
                       key=lambda s: attrs(s)["passhat.step"])
        assert all(s.parent_span_id == agent[0].span_id for s in tools), "tool spans sit under the agent span"
        assert [attrs(s)["gen_ai.tool.name"] for s in tools] == [c["tool"] for c in record["calls"]]
        assert [s.name for s in tools] == [f"execute_tool {c['tool']}" for c in record["calls"]]
        start_ns = datetime.fromisoformat(record["timing"]["started_at"]).timestamp() * 1e9
        assert abs(roots[0].start_time_unix_nano - start_ns) < 2_000
        for s, call in zip(tools, record["calls"], strict=True):
            assert abs(s.start_time_unix_nano - roots[0].start_time_unix_nano - call["started_at"] * 1e9) < 2_000
            assert s.end_time_unix_nano >= s.start_time_unix_nano
            assert json.loads(attrs(s)["gen_ai.tool.call.arguments"]) == call["arguments"]
            if call["status"] != "ok":
                assert s.status.code == 2 and attrs(s)["error.type"] == call["status"]
        if record["failure"]:
            assert root["passhat.failure.category"] == record["failure"]["category"]
            step = record["failure"]["step"]
            if step is not None:
                culprit = next(s for s in tools if attrs(s)["passhat.step"] == step)
                assert attrs(culprit)["passhat.failure.category"] == record["failure"]["category"]


def test_cli_export_and_run_with_otlp(hasty_run: Path, receiver: Receiver, tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["export-otlp", str(hasty_run), "--endpoint", receiver.url, "--no-content"])
    assert r.exit_code == 0, r.output
    assert "38 trace(s)" in r.output
    assert not any("gen_ai.tool.call.arguments" in attrs(s) for _, s in receiver.spans)
    receiver.spans.clear()
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", "reimbursement", "--agent", "careful", "--trials", "1", "--out", str(out),
                                  "-q", "--no-report", "--no-sanity", "--otlp", receiver.url])
    assert r.exit_code == 0, r.output
    assert len(receiver.traces()) == 19


def test_an_infrastructure_error_exports_as_one_failed_root(hasty_run: Path, receiver: Receiver, tmp_path: Path) -> None:
    run = Path(shutil.copytree(hasty_run, tmp_path / "run"))
    lines = (run / "trials.jsonl").read_text("utf-8").splitlines()
    broken = json.loads(lines[0])
    broken.update(outcome="error", end_reason="harness_error", spans=[], calls=[], error="Traceback …\nOSError: disk full")
    (run / "trials.jsonl").write_text("\n".join([json.dumps(broken), *lines[1:]]) + "\n", "utf-8")
    export_run(run, receiver.url)
    lone = [spans for spans in receiver.traces().values() if len(spans) == 1]
    assert len(receiver.traces()) == 38 and len(lone) == 1
    root = lone[0][0]
    assert not root.parent_span_id and root.status.code == 2 and root.status.message == "OSError: disk full"
    assert attrs(root)["passhat.case_id"] == broken["case_id"] and attrs(root)["passhat.outcome"] == "error"


def test_two_runs_with_one_seed_do_not_share_trace_ids(hasty_run: Path) -> None:
    manifest = Manifest.of_run(hasty_run)
    other = manifest.model_copy(update={"agent": "careful"})
    assert export_trace_id(manifest, "abc") != export_trace_id(other, "abc")
    assert export_trace_id(manifest, "abc") == export_trace_id(Manifest.of_run(hasty_run), "abc"), "re-export is idempotent"


def test_endpoint_errors_are_reported(hasty_run: Path) -> None:
    assert traces_endpoint("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert traces_endpoint("http://h:4318/custom/path") == "http://h:4318/custom/path"
    with pytest.raises(ExportError, match="expected an http"):
        traces_endpoint("127.0.0.1:4318")
    with pytest.raises(ExportError, match="did not accept"):
        export_run(hasty_run, "http://127.0.0.1:9", timeout=0.5)
    r = CliRunner().invoke(main, ["export-otlp", str(hasty_run), "--endpoint", "http://127.0.0.1:9", "--timeout", "0.5"])
    assert r.exit_code == 2 and "did not accept" in r.output


def test_missing_extra_names_the_install_command(hasty_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(ExportError, match=r"passhat\[otel\]"):
        export_run(hasty_run, "http://127.0.0.1:4318")
