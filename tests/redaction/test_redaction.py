"""Personal data never reaches the run folder unless the user opts out explicitly."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from passhat.cli import main
from passhat.redaction import Redactor, luhn_ok

PII = Path(__file__).parents[1] / "data" / "pii"
SECRETS = ["mei.chen@example.com", "4111 1111 1111 1111", "4111111111111111", "138 0013 8000"]


def run(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(PII / "cases"), "--agent", f"{PII / 'agents.py'}:echo", "--trials", "2",
                                  "--out", str(out), "-q", *extra])
    assert r.exit_code == 0, r.output
    return out


def grep(folder: Path) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text("utf-8", errors="replace")
            found += [f"{path.name}: {s}" for s in SECRETS if s in text]
    return found


def test_run_folder_holds_no_email_phone_or_card(tmp_path: Path) -> None:
    out = run(tmp_path)
    assert grep(out) == []
    record = json.loads((out / "trials.jsonl").read_text().splitlines()[0])
    assert record["outcome"] == "pass"  # grading saw the real values; only what is written is redacted
    assert "[REDACTED:email]" in record["reply"] and "[REDACTED:card]" in record["reply"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["redaction"]["enabled"] is True and "email" in manifest["redaction"]["patterns"]


def test_opting_out_is_explicit_and_recorded(tmp_path: Path) -> None:
    out = run(tmp_path, "--no-redact")
    assert any("mei.chen@example.com" in hit for hit in grep(out))
    assert json.loads((out / "manifest.json").read_text())["redaction"]["enabled"] is False


def test_extra_fields_and_patterns(tmp_path: Path) -> None:
    r = Redactor.build(extra_fields=["name"], extra_patterns={"customer": r"C-\d+"})
    assert r.value({"name": "Mei", "note": "customer C-1"}) == {"name": "[REDACTED:name]", "note": "customer [REDACTED:customer]"}
    bad = CliRunner().invoke(main, ["run", str(PII / "cases"), "--agent", "noop", "--redact-pattern", "x=("])
    assert bad.exit_code == 2 and "invalid regular expression" in bad.output


def test_card_numbers_need_a_valid_checksum() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    r = Redactor()
    assert r.text("order 1234567890123456") == "order 1234567890123456"
    assert r.text("dates 2026-10-31 and amounts 118.5 stay") == "dates 2026-10-31 and amounts 118.5 stay"


def test_exported_spans_carry_no_personal_data(tmp_path: Path) -> None:
    import gzip
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import pytest

    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs the otel extra")
    from passhat.export import export_run

    bodies: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            bodies.append(gzip.decompress(body) if self.headers.get("Content-Encoding") == "gzip" else body)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = run(tmp_path)
        export_run(out, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    raw = b"".join(bodies)
    assert b"REDACTED" in raw  # the spans did carry the (redacted) content
    assert not [s for s in SECRETS if s.encode() in raw]
