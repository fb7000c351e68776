"""Raw HTTP servers for tests of misbehaving peers (a provider that stalls, an agent service whose body never
ends): a socketserver that reads each request whole and then does what the test's handler says, started on
127.0.0.1 in a thread and stopped when the test ends. http.server would answer for them; these must not."""

from __future__ import annotations

import asyncio
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, TypeVar


def read_request(rfile: IO[bytes]) -> tuple[dict[str, str], bytes]:
    """Read one request's header lines and its ``content-length`` body, and nothing more; the headers (names
    in lower case; the request line under ``""``) and the body."""
    headers = {"": rfile.readline().decode("latin-1").strip()}
    while (line := rfile.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers, rfile.read(int(headers.get("content-length", 0)))


class RawServer(socketserver.ThreadingTCPServer):
    """A threading TCP server on a free 127.0.0.1 port whose handler threads die with the test."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler: type[socketserver.BaseRequestHandler]) -> None:
        self.done = threading.Event()
        """Set when the test ends: handlers that stall wait on it."""
        super().__init__(("127.0.0.1", 0), handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


S = TypeVar("S", bound=RawServer)


@contextmanager
def started(factory: Callable[[str], S]) -> Iterator[Callable[[str], S]]:
    """``start(mode)`` makes a server with ``factory`` and serves it in a thread; all are stopped on exit."""
    servers: list[S] = []

    def start(mode: str) -> S:
        server = factory(mode)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.done.set()
            server.shutdown()
            server.server_close()


def exchange(app: Any, request: bytes, *, until_closed: bool = False) -> bytes:
    """Serve the ASGI ``app`` with passhat's own HTTP/1.1 server on a free port, send the raw ``request`` bytes and
    return what came back: the first read, or (``until_closed``) everything until the server closes."""
    from passhat.serve.http11 import HttpService

    async def main() -> bytes:
        service = HttpService(app)
        server = await asyncio.get_running_loop().create_server(service.protocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        def probe() -> bytes:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                conn.sendall(request)
                if not until_closed:
                    return conn.recv(4096)
                got = b""
                while chunk := conn.recv(4096):
                    got += chunk
                return got

        try:
            return await asyncio.get_running_loop().run_in_executor(None, probe)
        finally:
            server.close()
            service.close_idle()
            await server.wait_closed()

    return asyncio.run(main())
