"""The tool server's HTTP connections, bounded: what anyone who can reach 127.0.0.1 can make the runner do.

uvicorn's httptools protocol, which the tool server runs, puts no limit on a request's head and no clock on
a request before it reaches the application: a 64 MiB header took 26.7 s of the event loop (httptools joins
a header value chunk by chunk) and 128 MB of memory, and slowed every other trial's calls from 7 ms to
122 ms; a connection that never sends a whole request stayed open for ever. All of that happens before
routing, so no token is needed. :class:`GuardedHttpProtocol` adds the bounds h11 and Node's HTTP server
have, answering as they do:

- a request head (request line and header fields) longer than :attr:`HttpLimits.max_head_bytes`, or with
  more than :attr:`HttpLimits.max_headers` fields: ``431`` and the connection closed, having read no more
  than the limit of it (the parser is fed the head in bounded pieces);
- a head not whole within :attr:`HttpLimits.head_timeout_s` of the connection opening, or of its first byte
  on a kept-alive connection: ``408`` and closed (a connection that sends nothing is just closed);
- a body not whole within :attr:`HttpLimits.body_timeout_s` of its head: ``408`` and closed. The handler sees
  the client gone, so a tool call whose body never arrived is not made (docs/agents.md).

A kept-alive connection idle between requests is closed after uvicorn's ``timeout_keep_alive``. These
answers are plain text: they come before the request is routed, so before it is known to be an MCP one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from passhat.serve.watch import PEER, Peer

MAX_HEAD_BYTES = 32 * 1024
"""Twice what h11 and Node's HTTP server accept (16 KiB); an agent's SDK sends about 1 KiB."""
MAX_HEADERS = 100
"""Apache's default (``LimitRequestFields``); an agent's SDK sends about 15."""
HEAD_TIMEOUT_S = 10.0
"""A client on the same machine sends its head in microseconds; a stalled one holds a connection this long."""
BODY_TIMEOUT_S = 30.0
"""For the whole body: the largest accepted (4 MiB) crosses the loopback in milliseconds."""


@dataclass(frozen=True)
class HttpLimits:
    """Bounds on every connection of the tool server (module docstring)."""

    max_head_bytes: int = MAX_HEAD_BYTES
    max_headers: int = MAX_HEADERS
    head_timeout_s: float = HEAD_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S


class _Refused(Exception):
    """Raised inside a parser callback to stop parsing a request that is refused."""


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with :class:`HttpLimits`; :func:`guarded_protocol` binds the limits."""

    limits = HttpLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        """No request is being parsed, or its head is not complete yet: bytes received count against the head."""
        self._head_bytes = 0
        self._header_count = 0
        self._clock: asyncio.TimerHandle | None = None
        """The head's or the body's deadline, whichever is running (never both)."""
        self._refusal: tuple[int, str] | None = None

    # --- connection ------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.peer = Peer(transport)
        """The client end, for the requests' watches (every request's scope carries it: serve/watch.py)."""
        self._start_clock(self.limits.head_timeout_s, "head")

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_clock()
        self.peer.lost()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._unset_keepalive_if_required()
        while data and not self.transport.is_closing():
            if not self._in_head:
                self._feed(data)
                return
            if self._clock is None:  # the first byte of the next request on a kept-alive connection
                self._start_clock(self.limits.head_timeout_s, "head")
            room = self.limits.max_head_bytes - self._head_bytes
            piece, data = data[:room], data[room:]
            self._head_bytes += len(piece)
            self._feed(piece)
            if self._in_head and self._head_bytes >= self.limits.max_head_bytes and not self.transport.is_closing():
                self._refuse(431, f"request head larger than {self.limits.max_head_bytes} bytes")
                return

    def _feed(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError:
            if self._refusal is not None:
                self._refuse(*self._refusal)
            else:
                self.send_400_response("Invalid HTTP request received.")

    # --- parser callbacks ------------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._header_count = 0
        super().on_message_begin()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.limits.max_headers:
            self._refusal = (431, f"more than {self.limits.max_headers} header fields")
            raise _Refused
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self.scope[PEER] = self.peer  # type: ignore[literal-required]
        self._in_head = False
        self._stop_clock()
        self._start_clock(self.limits.body_timeout_s, "body")  # stopped at once below when there is no body
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None:
            cycle.transport = _OneWrite(self.transport, cycle, self.loop)  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        self._stop_clock()
        self._in_head, self._head_bytes = True, 0
        super().on_message_complete()

    # --- deadlines and refusals ------------------------------------------------------------------------

    def _start_clock(self, seconds: float, stage: str) -> None:
        self._stop_clock()
        self._clock = self.loop.call_later(seconds, self._too_slow, stage)

    def _stop_clock(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None

    def _too_slow(self, stage: str) -> None:
        self._clock = None
        if self.transport.is_closing():
            return
        if stage == "head":
            if self._head_bytes == 0:
                self.transport.close()  # connected and said nothing: nobody to answer
            else:
                self._refuse(408, f"request head not received within {self.limits.head_timeout_s:g} s")
            return
        if self.pipeline or self.flow.read_paused:
            # not the client's delay: reading waits for the application (a pipelined request queued behind a
            # held one, or a body the handler has not asked for yet)
            self._start_clock(self.limits.body_timeout_s, stage)
            return
        cycle = self.cycle
        if cycle.response_started:
            self.transport.close()
            return
        cycle.disconnected = True  # the handler now reads a disconnect and its answer goes nowhere
        cycle.message_event.set()
        self._refuse(408, f"request body not received within {self.limits.body_timeout_s:g} s")

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with ``message`` as plain text and close the connection."""
        body = message.encode("ascii")
        self.transport.write(b"".join([
            STATUS_LINE[status], b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: ", str(len(body)).encode(), b"\r\n", b"connection: close\r\n", b"\r\n", body,
        ]))
        self.transport.close()


class _OneWrite:
    """A response's transport as uvicorn's request cycle writes to it: the status line and headers are held
    until the first part of the body, so a whole answer leaves in one ``send`` (uvicorn writes them apart:
    two segments, and often two wake-ups of the client, per answer). A head with no body in the same turn
    of the event loop (a stream that starts and then waits for events) is sent at the end of that turn."""

    __slots__ = ("_cycle", "_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, cycle: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._cycle = cycle
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        if self._held is not None:
            data, self._held = self._held + data, None
        elif self._cycle.response_started and not self._cycle.response_complete and data.endswith(b"\r\n\r\n"):
            self._held = data  # the head (a 100 Continue is written before the response starts: never held)
            self._loop.call_soon(self.flush)
            return
        self._transport.write(data)

    def flush(self) -> None:
        if self._held is not None:
            data, self._held = self._held, None
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def guarded_protocol(limits: HttpLimits) -> type[GuardedHttpProtocol]:
    """The protocol class to give uvicorn (``Config(http=...)``) for connections bounded by ``limits``."""
    return type("GuardedHttpProtocol", (GuardedHttpProtocol,), {"limits": limits})


__all__ = ["BODY_TIMEOUT_S", "HEAD_TIMEOUT_S", "MAX_HEADERS", "MAX_HEAD_BYTES", "GuardedHttpProtocol", "HttpLimits",
           "guarded_protocol"]
