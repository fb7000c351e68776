"""The tool server's HTTP/1.1: connections parsed with httptools, each request handed to an ASGI app, and
the bounds that keep anyone who can reach 127.0.0.1 from hurting the run.

Why its own server: the tool server answers a few requests per trial from agents on the same machine, so
what it costs per request is what an agent elsewhere costs the run. uvicorn (which served it before) spent
~40 µs of Python per request before the application ran — a task, an event, three timers and a middleware
each — and wrote every answer's head and body apart; here a request costs what parsing and one write cost.
What is left out on purpose: WebSockets, HTTP/2, TLS, proxy headers (nothing stands between the agents and
this server), access logs.

Bounds (:class:`HttpLimits`), all enforced before a request is routed, so no token is needed to meet them:

- a request head (request line and header fields) longer than ``max_head_bytes``, or with more than
  ``max_headers`` fields: ``431`` and the connection closed, having read no more than the limit of it (the
  parser is fed the head in bounded pieces; a 32 MiB header once took 26.7 s of the event loop);
- a head not whole within ``head_timeout_s`` of the connection opening, or of the first byte of the next
  request on a kept-alive connection: ``408`` and closed (a connection that sends nothing is just closed);
- a body not whole within ``body_timeout_s`` of its head: ``408`` and closed; the application sees the
  client gone, so a tool call whose body never arrived is not made;
- a kept-alive connection idle for ``idle_timeout_s`` is closed;
- at most ``max_connections`` open connections: a new one beyond it makes room by closing the connection
  that has waited longest without a request in progress (idle, or still sending its head); when every one
  is busy, the new one gets ``503`` and is closed.

These answers are plain text: they come before the request is routed, so before it is known to be an MCP
one. Deadlines are checked lazily: a connection keeps one timer, re-armed only when it fires early, so a
request changes a number instead of scheduling three timers.
"""

from __future__ import annotations

import asyncio
import collections
import http
import logging
import re
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

import httptools

from passhat.serve.watch import PEER, Peer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

MAX_HEAD_BYTES = 32 * 1024
"""Twice what h11 and Node's HTTP server accept (16 KiB); an agent's SDK sends about 1 KiB."""
MAX_HEADERS = 100
"""Apache's default (``LimitRequestFields``); an agent's SDK sends about 15."""
HEAD_TIMEOUT_S = 10.0
"""A client on the same machine sends its head in microseconds; a stalled one holds a connection this long."""
BODY_TIMEOUT_S = 30.0
"""For the whole body: the largest accepted (4 MiB) crosses the loopback in milliseconds."""
IDLE_TIMEOUT_S = 30.0
"""A kept-alive connection with no request this long is closed (clients reconnect at once when they need to)."""
MAX_CONNECTIONS = 4096
"""Open connections at most; each holds a file descriptor of the run's process (module docstring)."""
MAX_DRAIN = 1024 * 1024
"""The most of a request body that is read and dropped after an early answer (a refusal) to keep the
connection; a longer one (declared so, or chunked past it) closes the connection instead."""
HIGH_WATER = 64 * 1024
"""Unread request body buffered before the connection stops reading until the application asks for more."""

_log = logging.getLogger("passhat.serve")


def _status_line(status: int) -> bytes:
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    return f"HTTP/1.1 {status} {phrase}\r\n".encode("ascii")


STATUS_LINE = {status: _status_line(status) for status in range(100, 600)}
_BAD_HEADER = re.compile(rb"[\r\n\x00]").search
"""What a header name or value must not hold (it would end the field, or the head, early)."""
_METHODS = {m.encode(): m for m in ("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH")}
_ASGI = {"version": "3.0", "spec_version": "2.3"}


@dataclass(frozen=True)
class HttpLimits:
    """Bounds on every connection of the tool server (module docstring)."""

    max_head_bytes: int = MAX_HEAD_BYTES
    max_headers: int = MAX_HEADERS
    head_timeout_s: float = HEAD_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S
    idle_timeout_s: float = IDLE_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS


class HttpService:
    """One listening address's shared state: the application, the limits and the open connections."""

    def __init__(self, app: ASGIApp, limits: HttpLimits | None = None) -> None:
        self.app = app
        self.limits = limits or HttpLimits()
        self.connections: set[HttpConnection] = set()
        self.refused = 0
        """Connections answered ``503`` because every open one was busy (:data:`MAX_CONNECTIONS`)."""
        self.evicted = 0
        """Connections closed to make room for a new one."""

    def protocol(self) -> HttpConnection:
        """A protocol instance for ``loop.create_server`` / ``create_unix_server``."""
        return HttpConnection(self)

    def close_idle(self) -> None:
        """Close every connection with no request in progress (the server is stopping)."""
        for conn in list(self.connections):
            if conn.request is None:
                conn.close()

    def busy(self) -> list[asyncio.Task[None]]:
        """The tasks of the requests in progress."""
        return [conn.request.task for conn in self.connections if conn.request is not None and conn.request.task]

    def _make_room(self) -> bool:
        """Close the connection waiting longest without a request in progress (idle, still sending its head,
        or a body its application has not started on); ``False`` when none is."""
        waiting = [c for c in self.connections
                   if (c.request is None or c.request.task is None) and c.transport is not None]
        if not waiting:
            return False
        min(waiting, key=lambda c: c.waiting_since).close()
        self.evicted += 1
        return True


Stage = Literal["head", "body", "idle", "app"]


class HttpConnection(asyncio.Protocol):
    """One client connection (module docstring)."""

    def __init__(self, service: HttpService) -> None:
        self.service = service
        self.limits = service.limits
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.peer: Peer | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.request: _Request | None = None
        """The request being answered."""
        self._parsing: _Request | None = None
        """The request whose bytes the parser is reading (the same, or one pipelined after it)."""
        self._queued: collections.deque[_Request] = collections.deque()
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._in_head = True
        self._head_bytes = 0
        self._refusal: tuple[int, str] | None = None
        self._stage: Stage = "head"
        self._deadline: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._read_paused = False
        self._write_paused = False
        self._scope: Scope = {}
        """What every request's scope on this connection shares (set when the connection is made)."""
        self._max_headers = self.limits.max_headers
        self._max_head_bytes = self.limits.max_head_bytes
        self._drained: asyncio.Future[None] | None = None
        self._clock = time.monotonic if type(self.loop).time is asyncio.BaseEventLoop.time else self.loop.time
        """The loop's clock (``loop.call_at`` takes its times): ``time.monotonic`` itself when that is what it is,
        saving a Python call at each stage of every request."""
        self.waiting_since = self._clock()
        """When the connection last started waiting for a request (for :meth:`HttpService._make_room`)."""

    # --- connection ----------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.peer = Peer(self.transport)  # type: ignore[arg-type]
        self._scope = {
            "type": "http", "asgi": _ASGI, "server": _address(transport.get_extra_info("sockname")),
            "client": _address(transport.get_extra_info("peername")), "scheme": "http", "root_path": "",
            PEER: self.peer,
        }
        service = self.service
        if len(service.connections) >= self.limits.max_connections and not service._make_room():
            service.refused += 1
            self._refuse(503, f"more than {self.limits.max_connections} open connections; try again")
            return
        service.connections.add(self)
        self._set_stage("head", self.limits.head_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self.service.connections.discard(self)
        if self.peer is not None:
            self.peer.lost()
        self._deadline = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for request in (self.request, self._parsing, *self._queued):
            if request is not None:
                request.disconnected = True
                request.wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def eof_received(self) -> bool:
        return False  # a half-closed client is a gone one: close (uvicorn did the same)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def drain(self) -> None:
        """Wait until the transport takes more (a large answer to a slow reader)."""
        if self._write_paused and self.transport is not None and not self.transport.is_closing():
            self._drained = self.loop.create_future()
            await self._drained

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # --- reading -------------------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        transport = self.transport
        assert transport is not None
        limit = self._max_head_bytes
        while data and not transport.is_closing():
            if not self._in_head:
                self._feed(data)
                return
            if self._stage == "idle":  # the first byte of the next request on a kept-alive connection
                self._set_stage("head", self.limits.head_timeout_s)
            room = limit - self._head_bytes
            if len(data) <= room:  # the usual: all of it fits (no copies)
                piece, data = data, b""
            else:
                piece, data = data[:room], data[room:]
            self._head_bytes += len(piece)
            self._feed(piece)
            if self._in_head and self._head_bytes >= limit and not transport.is_closing():
                self._refuse(431, f"request head larger than {limit} bytes")
                return

    def _feed(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass  # no protocol upgrades here: the request is answered as plain HTTP, and the connection closed
        except httptools.HttpParserError:
            if self._refusal is not None:
                self._refuse(*self._refusal)
            else:
                self._refuse(400, "Invalid HTTP request received.")

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = []
        self._in_head = True

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        headers = self._headers
        if len(headers) >= self._max_headers:
            self._refusal = (431, f"more than {self._max_headers} header fields")
            raise _Refused
        # llhttp keeps trailing whitespace, which RFC 9110 §5.5 excludes from the value
        headers.append((name.lower(), value.rstrip(b" \t")))

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        if self.transport is None or self.transport.is_closing():
            # a request read after the connection was closed (pipelined behind one answered with a close, in the
            # same read): never answered, so never run; its bytes are dropped with the connection
            self._parsing = None
            return
        parser = self.parser
        method = parser.get_method()
        version = parser.get_http_version()
        raw_path = self._url
        if raw_path[:1] == b"/" and b"?" not in raw_path and b"#" not in raw_path:
            query = b""  # origin-form with no query: what every agent's client sends (parse_url costs more)
        else:
            url = httptools.parse_url(raw_path)
            raw_path, query = url.path, url.query or b""
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        headers = self._headers
        scope: Scope = {**self._scope, "http_version": version, "method": _METHODS.get(method) or method.decode("ascii"),
                        "path": path, "raw_path": raw_path, "query_string": query, "headers": headers}
        keep_alive = version == "1.1" and parser.should_keep_alive() and not parser.should_upgrade()
        # what framing says, in one pass (llhttp refuses a duplicate Content-Length, and one beside Transfer-Encoding)
        fields = dict(headers)
        expect = b"expect" in fields and any(k == b"expect" and v.lower() == b"100-continue" for k, v in headers)
        request = _Request(self, scope, keep_alive, expect)
        self._parsing = request
        if self.request is None:
            if expect or not _small_body(fields):
                self._start(request)
            else:  # the application starts once the body is whole: one turn of the loop for the request
                self.request = request
            self._set_stage("body", self.limits.body_timeout_s)
        else:  # pipelined: answered in order; stop reading meanwhile
            self._queued.append(request)
            self._pause_reading()

    def on_body(self, body: bytes) -> None:
        request = self._parsing
        if request is None:
            return
        if request.response_done:  # answered already (a refusal): the rest is read and dropped, up to a bound
            request.dropped += len(body)
            if request.dropped > MAX_DRAIN:
                self.close()
            return
        request.body += body
        if len(request.body) > HIGH_WATER:
            self._pause_reading()
        if request._waiter is not None:  # the application waits for it (not when the body is waited for whole)
            request.wake()

    def on_message_complete(self) -> None:
        self._in_head = True  # what follows is the next request's head
        self._head_bytes = 0
        request = self._parsing
        self._parsing = None
        if request is None:
            return
        request.body_done = True
        if request._waiter is not None:
            request.wake()
        if request is self.request:
            if request.response_done:  # the rest of a body answered early has been dropped: go on
                self.request = None
                self._go_on()
            else:
                self._set_stage("app", None)
                if request.task is None:
                    self._start(request, now=True)

    def _pause_reading(self) -> None:
        if not self._read_paused and self.transport is not None and not self.transport.is_closing():
            self._read_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self._read_paused and not self._queued and self.transport is not None and not self.transport.is_closing():
            self._read_paused = False
            self.transport.resume_reading()

    # --- requests ------------------------------------------------------------------------------------------

    def _start(self, request: _Request, *, now: bool = False) -> None:
        """Answer ``request`` in a task of its own. ``now``: the request has arrived whole (read in this callback),
        so its task's first step runs at once, in this callback, rather than at the loop's next turn (one turn,
        one ``epoll_wait``, less per request); its application usually answers in that step."""
        self.request = request
        loop = self.loop
        coro = request.run(self.service.app)
        if not now or asyncio.current_task(loop) is not None:  # not from the loop's own read callback: no nesting
            request.task = loop.create_task(coro)
        elif _EAGER_START and loop.get_task_factory() is None:
            request.task = asyncio.Task(coro, loop=loop, eager_start=True)  # type: ignore[call-arg]
        else:
            task = request.task = loop.create_task(coro)
            _step_now(loop, task)

    def finished(self, request: _Request) -> None:
        """The request's answer went out whole (or it never will): go on with the connection."""
        if request is not self.request:
            return
        transport = self.transport
        if transport is None or transport.is_closing():
            self.request = None
            return
        if not (request.keep_alive and request.response_done):
            self.request = None
            transport.close()  # a broken answer, or the client asked to close
            return
        if not request.body_done:
            # answered before its body was read (a refusal): the rest is dropped as it comes (on_body), within
            # the body's deadline, and the connection goes on at its end; a body too large to drop is cut off
            declared = next((v for k, v in request.scope["headers"] if k == b"content-length"), b"0")
            if not declared.isdigit() or int(declared) > MAX_DRAIN:
                self.request = None
                transport.close()
                return
            self.resume_reading()  # it may have paused for the unread body
            return
        self.request = None
        self._go_on()

    def _go_on(self) -> None:
        """The next pipelined request, or wait for one."""
        if self._queued:
            nxt = self._queued.popleft()
            self._start(nxt)
            if nxt.body_done:
                self._set_stage("app", None)
            else:
                self._set_stage("body", self.limits.body_timeout_s)
            self.resume_reading()
            return
        self.waiting_since = self._clock()
        self._set_stage("idle", self.limits.idle_timeout_s)
        self.resume_reading()

    # --- deadlines -----------------------------------------------------------------------------------------

    def _set_stage(self, stage: Stage, seconds: float | None) -> None:
        self._stage = stage
        if seconds is None:
            self._deadline = None
            return
        deadline = self._deadline = self._clock() + seconds
        if self._timer is None:
            self._timer = self.loop.call_at(deadline, self._check_deadline)

    def _check_deadline(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None or self.transport is None or self.transport.is_closing():
            return
        if self._clock() < deadline:
            self._timer = self.loop.call_at(deadline, self._check_deadline)
            return
        self._deadline = None
        stage = self._stage
        if stage == "idle":
            self.transport.close()
        elif stage == "head":
            if self._head_bytes == 0 and self.request is None:
                self.transport.close()  # connected and said nothing: nobody to answer
            else:
                self._refuse(408, f"request head not received within {self.limits.head_timeout_s:g} s")
        elif stage == "body":
            request = self.request
            if self._read_paused or request is None:
                # not the client's delay: reading waits for the application
                self._set_stage("body", self.limits.body_timeout_s)
                return
            if request.response_started:
                request._flush_head()  # an answer's head still waiting for its body goes before the close
                self.transport.close()
                return
            request.disconnected = True  # the handler now reads a disconnect and its answer goes nowhere
            request.wake()
            self._refuse(408, f"request body not received within {self.limits.body_timeout_s:g} s")

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with ``message`` as plain text and close the connection."""
        assert self.transport is not None
        body = message.encode("ascii")
        self.transport.write(b"".join([
            STATUS_LINE[status], b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: ", str(len(body)).encode(), b"\r\n", b"connection: close\r\n", b"\r\n", body,
        ]))
        self.transport.close()


_EAGER_START = sys.version_info >= (3, 12)
"""Python 3.12's tasks can run their first step as they are made (``eager_start``)."""


def _step_now(loop: asyncio.AbstractEventLoop, task: asyncio.Task[None]) -> None:
    """Run ``task``'s first step now, as ``eager_start`` does on Python 3.12: its step is the callback the task
    just queued (the last of the loop's ready ones), taken out and run here, so the step runs as it would have
    at the next turn, as the current task (``asyncio.timeout``, anyio and the MCP SDK need one). On a loop
    that keeps no such queue (not asyncio's own), or if the last callback is not that step, it stays queued."""
    ready = getattr(loop, "_ready", None)
    if not ready:
        return
    handle = ready[-1]
    if getattr(handle._callback, "__self__", None) is task and not handle.cancelled():
        ready.pop()
        handle._run()


def _small_body(fields: dict[bytes, bytes]) -> bool:
    """The request (its header fields, lower-cased names) declares a body small enough to wait for whole before
    its application starts: a ``Content-Length`` up to :data:`HIGH_WATER`, or none at all (with no
    ``Transfer-Encoding`` either, a request has no body: RFC 9112 §6.3; llhttp ends it with its head)."""
    if b"transfer-encoding" in fields:
        return False
    value = fields.get(b"content-length")
    return value is None or (value.isdigit() and int(value) <= HIGH_WATER)


def _address(info: Any) -> tuple[str, int | None] | None:
    """An ASGI ``server``/``client`` address: (host, port) over TCP, (path, None) for a unix socket's own end."""
    if isinstance(info, tuple | list) and len(info) >= 2:
        return (str(info[0]), int(info[1]))
    if isinstance(info, str) and info:
        return (info, None)
    return None


class _Refused(Exception):
    """Raised inside a parser callback to stop parsing a request that is refused."""


class _Request:
    """One request: its scope, its body as it arrives, and the ASGI ``receive`` and ``send`` of it."""

    __slots__ = ("body", "body_done", "conn", "disconnected", "dropped", "expect_continue", "head", "keep_alive", "last_sent",
                 "response_done", "response_started", "scope", "task", "chunked", "_waiter")

    def __init__(self, conn: HttpConnection, scope: Scope, keep_alive: bool, expect_continue: bool) -> None:
        self.conn = conn
        self.scope = scope
        self.keep_alive = keep_alive
        self.expect_continue = expect_continue
        self.body = bytearray()
        self.body_done = False
        self.dropped = 0
        """Body bytes dropped after the answer (:data:`MAX_DRAIN`)."""
        self.last_sent = False
        self.disconnected = False
        self.response_started = False
        self.response_done = False
        self.chunked = False
        self.head: bytes | None = None
        self.task: asyncio.Task[None] | None = None
        self._waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        self._waiter = self.conn.loop.create_future()
        await self._waiter

    async def run(self, app: ASGIApp) -> None:
        try:
            await app(self.scope, self.receive, self.send)
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                _log.error("the tool server's application failed on %s %s", self.scope["method"], self.scope["path"],
                           exc_info=exc)
            if not self.response_started and not self.disconnected:
                self._plain(500, "Internal Server Error")
            elif not self.response_done:  # cut off mid-answer; after a whole one the connection may carry the next
                self._flush_head()
                self.conn.close()
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            if not self.response_started and not self.disconnected:
                _log.error("the tool server's application returned without answering %s", self.scope["path"])
                self._plain(500, "Internal Server Error")
            elif not self.response_done and not self.disconnected:
                self._flush_head()
                self.conn.close()
        finally:
            self.conn.finished(self)

    def _plain(self, status: int, text: str) -> None:
        transport = self.conn.transport
        if transport is not None and not transport.is_closing():
            body = text.encode()
            transport.write(STATUS_LINE[status] + b"content-type: text/plain; charset=utf-8\r\ncontent-length: "
                            + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)
            transport.close()
        self.response_started = self.response_done = True

    async def receive(self) -> Message:
        while True:
            if self.disconnected or self.response_done:
                return {"type": "http.disconnect"}
            if self.body or (self.body_done and not self.last_sent):
                chunk = bytes(self.body)
                self.body.clear()
                self.last_sent = self.body_done
                if not self.body_done:
                    self.conn.resume_reading()
                return {"type": "http.request", "body": chunk, "more_body": not self.body_done}
            if self.expect_continue and not self.body_done:
                self.expect_continue = False
                transport = self.conn.transport
                if transport is not None and not transport.is_closing():
                    transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.conn.resume_reading()
            await self._wait()  # more body, the end of it, or the client gone (after the body: only that)

    async def send(self, message: Message) -> None:
        conn = self.conn
        if conn._write_paused:
            await conn.drain()
        if self.disconnected:
            return
        kind = message["type"]
        if not self.response_started:
            if kind != "http.response.start":
                raise RuntimeError(f"expected 'http.response.start', got {kind!r}")
            self.response_started = True
            if self.expect_continue and not self.body_done:
                # answered before asking for the body (a refusal): the client, never told to go on, sends no body,
                # so the bytes the connection would drop as it are its next request; end the connection instead
                self.keep_alive = False
            self.expect_continue = False
            self.head = self._head(message["status"], message.get("headers") or [])
            if self.chunked:
                self._flush_head()  # a stream: its head goes now, its parts as they come
            # an answer of known length: its head goes out with the first part of its body, in one write (a
            # client can do nothing with the head alone); an application that fails before any body sends the
            # head before the connection is closed (:meth:`run`), as a broken answer, not a silent close
            return
        if kind != "http.response.body" or self.response_done:
            raise RuntimeError(f"unexpected {kind!r} after the answer was complete" if self.response_done
                               else f"expected 'http.response.body', got {kind!r}")
        body = message.get("body", b"")
        more = message.get("more_body", False)
        if self.scope["method"] == "HEAD":
            body = b""
        elif self.chunked:
            body = (b"%x\r\n%b\r\n" % (len(body), body) if body else b"") + (b"" if more else b"0\r\n\r\n")
        data = (self.head + body) if self.head is not None else body
        self.head = None
        transport = conn.transport
        if data and transport is not None and not transport.is_closing():
            transport.write(data)
        if not more:
            self.response_done = True
            self.wake()
            conn.finished(self)

    def _head(self, status: int, headers: list[tuple[bytes, bytes]]) -> bytes:
        if _BAD_HEADER(b"".join(map(b"".join, headers))):
            raise RuntimeError("invalid HTTP header name or value")
        names = [name.lower() for name, _ in headers]
        if b"connection" in names or b"transfer-encoding" in names:  # framing is this server's: those are rewritten
            kept = []
            for lower, (name, value) in zip(names, headers, strict=True):
                if lower == b"connection" and b"close" in value.lower():
                    self.keep_alive = False  # written once below
                elif lower != b"transfer-encoding":
                    kept.append((name, value))
            headers = kept
        parts = [STATUS_LINE[status], *map(b": ".join, headers)]
        if b"content-length" not in names and self.scope["method"] != "HEAD" and status not in (204, 304) and status >= 200:
            self.chunked = True
            parts.append(b"transfer-encoding: chunked")
        if not self.keep_alive:
            parts.append(b"connection: close")
        parts.append(b"\r\n")
        return parts[0] + b"\r\n".join(parts[1:])  # the status line ends in its own CRLF; the last part is the blank line

    def _flush_head(self) -> None:
        head, self.head = self.head, None
        transport = self.conn.transport
        if head is not None and transport is not None and not transport.is_closing():
            transport.write(head)


__all__ = ["BODY_TIMEOUT_S", "HEAD_TIMEOUT_S", "IDLE_TIMEOUT_S", "MAX_CONNECTIONS", "MAX_HEADERS", "MAX_HEAD_BYTES",
           "HttpConnection", "HttpLimits", "HttpService"]
