"""What the Python recipes in examples/agents share, in the standard library only (a recipe's own virtual
environment need not have passhat in it).

- :func:`policy_of`: the trial's policy. passhat leaves a very long one out of the start message's
  environment copy; the trial URL always has it.
- :func:`serve_trials`: the recipe as an HTTP agent service (``--agent http://127.0.0.1:PORT/agent``).
  passhat POSTs each trial's start message and takes ``{"reply", "usage"}`` back, so a framework that takes
  seconds to import is imported once, not once per trial as under ``cmd:``. An error in a trial answers
  HTTP 500 with the traceback, which passhat records as the agent's crash.
"""

from __future__ import annotations

import json
import sys
import traceback
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def policy_of(start: dict[str, Any]) -> str:
    if start.get("policy") is not None:
        return str(start["policy"])
    request = urllib.request.Request(start["trial_url"], headers={"authorization": f"Bearer {start['token']}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["policy"])


def serve_trials(answer: Callable[[dict[str, Any]], dict[str, Any]], *, port: int, host: str = "127.0.0.1") -> None:
    """Serve ``answer(start)`` on ``http://host:port/agent`` until interrupted (port 0: any free port). The
    first line on stdout is the URL, so a script that started the service can read where it is."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            try:
                body, status = json.dumps(answer(json.loads(self.rfile.read(int(self.headers["content-length"]))))), 200
            except Exception:  # the trial failed: passhat records the agent's crash with this text
                body, status = traceback.format_exc(), 500
                print(body, file=sys.stderr, flush=True)
            data = body.encode()
            self.send_response(status)
            self.send_header("content-type", "application/json" if status == 200 else "text/plain")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    print(f"http://{host}:{server.server_address[1]}/agent", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.stdout.flush()
