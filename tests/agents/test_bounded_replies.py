"""An `http://` agent's reply is read up to a cap: an endless body is the agent's error, not memory growth
(issue 25, item 5: an audit's endless body reached 660 MB in 10 s)."""

from __future__ import annotations

import socketserver
from collections.abc import Iterator
from typing import Any

import pytest

from passhat.agents import service as service_module
from tests.raw_http import RawServer, read_request, started


class EndlessService(RawServer):
    """Answers 200 and then JSON-looking bytes for ever (``endless``), or declares a huge length (``declared``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sent = 0
        super().__init__(_Endless)


class _Endless(socketserver.StreamRequestHandler):
    server: EndlessService

    def handle(self) -> None:
        read_request(self.rfile)
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        if self.server.mode == "declared":
            self.wfile.write(head + b"content-length: 100000000000\r\n\r\n{\"reply\": \"")
            return
        self.wfile.write(head + b"connection: close\r\n\r\n{\"reply\": \"")
        block = b"x" * 65536
        try:
            while self.server.sent < 1 << 30:  # a bound for the test's own sake: 1 GB
                self.wfile.write(block)
                self.server.sent += len(block)
        except OSError:  # passhat stopped reading and dropped the connection
            return


@pytest.fixture
def endless() -> Iterator[Any]:
    with started(EndlessService) as start:
        yield start


@pytest.mark.parametrize("mode", ["endless", "declared"])
def test_a_reply_past_the_cap_fails_the_trial_and_is_not_read_on(run_suite: Any, notes_cases: Any, endless: Any,
                                                                  monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    cap = 1 << 20
    monkeypatch.setattr(service_module, "MAX_REPLY_BYTES", cap)  # 16 MB in a run; 1 MB keeps the test small
    server = endless(mode)
    (rec,) = run_suite(notes_cases(), f"http://127.0.0.1:{server.port}/agent")
    assert (rec.outcome, rec.end_reason) == ("fail", "agent_error")
    assert "answered a body larger than 1 MB" in rec.error
    assert server.sent < 64 * cap  # dropped soon after the cap, not drained to the end
