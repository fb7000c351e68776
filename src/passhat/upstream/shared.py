"""An HTTP upstream started once for the whole run (``Upstream(..., shared=True)``).

A server started per trial pays its start-up every trial: a Python server on the ``mcp`` SDK spends about
a second of CPU importing it. A server that tells trials apart by what each request carries — the
trial's database in a header, say — can serve a whole run from one process: passhat starts it on first
use, each trial still opens its own MCP session (with that trial's headers), and the process is stopped
when passhat exits. Its stderr is the run's, not a trial's (the trial's record says where it is).
"""

from __future__ import annotations

import atexit
import os
import shlex
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from passhat.errors import DomainError
from passhat.upstream.config import Upstream
from passhat.upstream.placeholders import fill


@dataclass
class SharedServer:
    """One running shared server."""

    process: subprocess.Popen[bytes]
    port: int
    stderr_path: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if not self.alive():
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=2)
                return
            except subprocess.TimeoutExpired:
                continue


_SERVERS: dict[tuple[str, str, str], SharedServer] = {}
_LOCK = threading.Lock()


def die_with_parent() -> None:
    """In the child, before it runs the server: on Linux, be sent SIGTERM when passhat dies, however it dies
    (a SIGKILL runs no ``atexit``); a server started in a new session would otherwise outlive the run."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the atexit hook below is all there is


def shared_server(upstream: Upstream, values: dict[str, str], env: dict[str, str], cwd: str | None,
                  free_port: int) -> SharedServer:
    """The run's server for ``upstream``, started now if it is not running (again, if it died)."""
    assert upstream.start is not None
    key = (upstream.name, upstream.start, cwd or "")
    with _LOCK:
        server = _SERVERS.get(key)
        if server is not None and server.alive():
            return server
        values = {**values, "port": str(free_port)}
        where = f"upstream server {upstream.name!r}"
        command = [fill(word, values, f"{where}: start") for word in shlex.split(upstream.start)]
        url = urlsplit(fill(upstream.target, values, f"{where}: url"))
        handle, name = tempfile.mkstemp(prefix=f"passhat-mcp-{upstream.name}-", suffix=".stderr")
        try:
            process = subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=handle,
                                       stderr=handle, start_new_session=True, preexec_fn=die_with_parent)
        except OSError as exc:
            raise DomainError(f"{where}: cannot start {command[0]!r}: {exc.strerror or exc}") from None
        finally:
            os.close(handle)
        server = SharedServer(process, free_port, Path(name))
        _wait_listening(server, url.hostname or "127.0.0.1", url.port or free_port, upstream, where)
        _SERVERS[key] = server
        return server


def _wait_listening(server: SharedServer, host: str, port: int, upstream: Upstream, where: str) -> None:
    deadline = time.monotonic() + upstream.start_timeout
    while True:
        if not server.alive():
            tail = server.stderr_path.read_text("utf-8", "replace")[-2000:].strip()
            raise DomainError(f"{where} exited with status {server.process.returncode} before listening on "
                              f"{host}:{port}" + (f"\n--- its stderr ---\n{tail}" if tail else ""))
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                raise DomainError(f"{where} did not listen on {host}:{port} within {upstream.start_timeout:g}s") from None
            time.sleep(0.02)


@atexit.register
def stop_all() -> None:
    """Stop every shared server this process started."""
    with _LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.stop()
