"""The run's tool server: one local HTTP server, each trial on its own URL with its own token.

It runs on the runner's event loop (uvicorn's HTTP protocol on a socket passhat binds itself, so a port
that cannot be bound is an infrastructure error, not a process exit), listens on 127.0.0.1 only, and is
shared by every trial of the run: opening a trial costs a dict entry and two random tokens. uvicorn
parses HTTP with httptools (a dependency: it halves the server's CPU per request against h11), through
:mod:`passhat.serve.guard`, which bounds every connection's head and its head and body times.
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
    from passhat.serve.guard import HttpLimits
    from passhat.serve.model_relay import ModelRelay


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
        """Bounds on every connection: head size and field count, head and body deadlines (serve/guard.py;
        ``None``: its defaults)."""
        self._want_mcp = mcp
        self._mcp: Any = None
        self._server: Any = None
        self._socket: socket.socket | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._scoped = ScopedApp(self.router)
        self._scoped_config: Any = None

    @property
    def started(self) -> bool:
        return self._server is not None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        """Bind and start serving; raises :class:`InfrastructureError` when the port cannot be bound."""
        if self.started:
            return
        import uvicorn  # imported here: only runs with out-of-process agents pay for it

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
        self._socket = sock
        self.port = sock.getsockname()[1]
        if self._want_mcp:
            self._mcp = _mcp_app()
            if self._mcp is not None:
                self.router.mcp = self._mcp
                await self._mcp.start()
        from passhat.serve.otlp import receive_traces

        self.router.otlp = receive_traces
        from passhat.serve.guard import HttpLimits, guarded_protocol  # imports uvicorn's protocol, as above

        protocol = guarded_protocol(self.limits or HttpLimits())
        # proxy_headers off: nothing sits between the agents and this server, and X-Forwarded-* from an agent
        # must not change what the server believes about a request (it also saves a middleware per request)
        config = uvicorn.Config(self.router, lifespan="off", log_config=None, log_level="error", access_log=False,
                                timeout_graceful_shutdown=1, timeout_keep_alive=30, http=protocol, proxy_headers=False)
        config.load()
        scoped = uvicorn.Config(self._scoped, lifespan="off", log_config=None, log_level="error", access_log=False,
                                timeout_graceful_shutdown=1, timeout_keep_alive=30, http=protocol, proxy_headers=False)
        scoped.load()
        self._scoped_config = scoped
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        self._server = server
        self._loop_task = asyncio.create_task(server.main_loop(), name="passhat-tool-server")

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
        await self.start()
        server, config = self._server, self._scoped_config

        def protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:  # as uvicorn's startup makes them
            return config.http_protocol_class(config=config, server_state=server.server_state,  # type: ignore[no-any-return]
                                              app_state=server.lifespan.state, _loop=_loop)

        self._scoped.sockets[path] = endpoint.id
        try:
            listener = await asyncio.get_running_loop().create_unix_server(protocol, path=path, backlog=128)
        except OSError as exc:
            self._scoped.sockets.pop(path, None)
            raise InfrastructureError(f"tool server: cannot listen on {path}: {exc.strerror or exc}") from exc
        try:
            yield
        finally:
            listener.close()
            self._scoped.sockets.pop(path, None)

    async def close(self) -> None:
        """Stop serving (open trials are ended first). The server can be started again afterwards."""
        for endpoint in list(self.router.open.values()):
            self.router.remove(endpoint)
        server, self._server = self._server, None
        if server is None:
            return
        server.should_exit = True
        if self._loop_task is not None:
            await self._loop_task
            self._loop_task = None
        await server.shutdown(sockets=[self._socket] if self._socket else None)
        if self._mcp is not None:
            await self._mcp.stop()
            self._mcp = None
        if self.relay is not None:
            await self.relay.aclose()
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self.port = self._requested_port

    async def __aenter__(self) -> ToolServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["ToolServer"]
