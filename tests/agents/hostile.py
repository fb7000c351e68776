"""What the hostile-agent tests share: a mailbox where concurrent trials swap URLs and tokens, a closed
port, and a look at every process on the machine for the children an agent left."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PROGRAM = Path(__file__).parents[1] / "data" / "programs" / "hostile_agent.py"


def processes_named(marker: str, wait_s: float = 3.0) -> list[int]:
    """Pids of live processes with ``marker`` in their command line, after up to ``wait_s`` for them to go
    (a SIGKILL is delivered asynchronously). Any found are killed by pid, so a failing test leaves nothing."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(pid))
            except OSError:
                pass
        if not found or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return found


class Mailbox:
    """A real HTTP server on 127.0.0.1: ``POST /put`` leaves a JSON value, ``GET /all`` lists them."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        box = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                box.items.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
                self._answer([])

            def do_GET(self) -> None:
                self._answer(box.items)

            def _answer(self, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> socket.socket:
    """A socket listening on 127.0.0.1 that no agent was allowed to reach (the caller closes it)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    return sock


def escapes(found: dict[str, str]) -> dict[str, str]:
    return {name: answer for name, answer in found.items() if not answer.startswith("blocked")}
