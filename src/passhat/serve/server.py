"""The run's tool server: one local HTTP server, each trial on its own URL with its own token.

It runs on the runner's event loop (:mod:`passhat.serve.http11` on a socket passhat binds itself, so a
port that cannot be bound is an infrastructure error, not a process exit), listens on 127.0.0.1 only, and
is shared by every trial of the run: opening a trial costs a dict entry and two random tokens. Every
connection is bounded (its head's size and time, its body's time, how long it may idle, how many may be
open): :class:`~passhat.serve.http11.HttpLimits`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from passhat.episode import Episode
from passhat.errors import InfrastructureError
from passhat.serve.app import TrialRouter
from passhat.serve.endpoint import PriceLookup, TrialEndpoint
from passhat.serve.scoped import ScopedApp

if TYPE_CHECKING:
    from passhat.serve.http11 import HttpLimits, HttpService
    from passhat.serve.model_relay import ModelRelay


GRACE_S = 1.0
"""How long requests still running when the server stops may take to finish."""


def _mcp_app() -> Any:
    """The MCP sub-application, or ``None`` when the ``mcp`` extra is not installed."""
    try:
        from passhat.serve.mcp import McpBridge
    except ImportError:
        return None
    return McpBridge()


class ToolServer:
    """Serves the tools, user and usage endpoints (plain HTTP, MCP, OTLP) of every trial of a run."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, prices: PriceLookup | None = None,
                 mcp: bool = True, relay: ModelRelay | None = None, limits: HttpLimits | None = None) -> None:
        self.host = host
        self._requested_port = port
        self.port = port
        """The port served on (``port=0`` picks a free one at :meth:`start`)."""
        self.prices = prices
        self.router = TrialRouter()
        self.relay = relay
        """The run's model relay (``/trials/{id}/models/NAME``), when the agent's own model calls are watched."""
        self.router.models = relay
        self.limits = limits
        """Bounds on every connection: head size and field count, head and body deadlines, idle time, open
        connections (serve/http11.py; ``None``: its defaults)."""
        self._want_mcp = mcp
        self._mcp: Any = None
        self._listener: asyncio.Server | None = None
        self._service: HttpService | None = None
        self._scoped = ScopedApp(self.router)

    @property
    def started(self) -> bool:
        return self._listener is not None

    @property
    def service(self) -> HttpService | None:
        """The TCP port's connections and counters, while serving."""
        return self._service

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        """Bind and start serving; raises :class:`InfrastructureError` when the port cannot be bound."""
        if self.started:
            return
        from passhat.serve.http11 import HttpLimits, HttpService  # only runs with out-of-process agents pay for it

        try:
            # proto must be TCP: asyncio sets TCP_NODELAY on accepted sockets only then, and without it every
            # answer waited ~40 ms for a delayed ACK
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._requested_port))
            sock.listen(1024)
            sock.setblocking(False)
        except OSError as exc:
            where = f"{self.host}:{self._requested_port}"
            raise InfrastructureError(f"tool server: cannot listen on {where}: {exc.strerror or exc}") from exc
        self.port = sock.getsockname()[1]
        if self._want_mcp:
            self._mcp = _mcp_app()
            if self._mcp is not None:
                self.router.mcp = self._mcp
                await self._mcp.start()
        from passhat.serve.otlp import receive_traces

        self.router.otlp = receive_traces
        service = HttpService(self.router, self.limits or HttpLimits())
        self._listener = await asyncio.get_running_loop().create_server(service.protocol, sock=sock)
        self._service = service

    @contextlib.asynccontextmanager
    async def trial(self, episode: Episode) -> AsyncIterator[TrialEndpoint]:
        """Open a trial's endpoint for as long as the block runs; at exit, pending requests are released
        and later requests refused (410)."""
        await self.start()
        endpoint = TrialEndpoint(episode, self.base_url, mcp=self._mcp is not None, prices=self.prices,
                                 models=self.relay.upstreams if self.relay is not None else ())
        self.router.add(endpoint)
        try:
            yield endpoint
        finally:
            self.router.remove(endpoint)

    @contextlib.asynccontextmanager
    async def unix_socket(self, endpoint: TrialEndpoint, path: str) -> AsyncIterator[None]:
        """Serve ``endpoint``'s own URLs, and nothing else, on a unix socket at ``path`` while the block runs:
        a sandboxed agent's only way to its tools (:mod:`passhat.serve.scoped`)."""
        from passhat.serve.http11 import HttpLimits, HttpService

        await self.start()
        self._scoped.sockets[path] = endpoint.id
        service = HttpService(self._scoped, self.limits or HttpLimits())
        try:
            listener = await asyncio.get_running_loop().create_unix_server(service.protocol, path=path, backlog=128)
        except OSError as exc:
            self._scoped.sockets.pop(path, None)
            raise InfrastructureError(f"tool server: cannot listen on {path}: {exc.strerror or exc}") from exc
        try:
            yield
        finally:
            listener.close()
            service.close_idle()
            self._scoped.sockets.pop(path, None)

    async def close(self) -> None:
        """Stop serving (open trials are ended first; requests still running get a second to finish, then
        are cancelled). The server can be started again afterwards."""
        for endpoint in list(self.router.open.values()):
            self.router.remove(endpoint)
        listener, self._listener = self._listener, None
        service, self._service = self._service, None
        if listener is None:
            return
        listener.close()
        if service is not None:
            service.close_idle()
            busy = service.busy()
            if busy:
                _, pending = await asyncio.wait(busy, timeout=GRACE_S)
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
            for conn in list(service.connections):
                conn.close()
        await listener.wait_closed()
        if self._mcp is not None:
            await self._mcp.stop()
            self._mcp = None
        if self.relay is not None:
            await self.relay.aclose()
        self.port = self._requested_port

    async def __aenter__(self) -> ToolServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["ToolServer"]
