"""A small HTTP/1.1 client for passhat's own plain-HTTP calls: a trial's tools, an agent service.

An agent that runs elsewhere costs each trial a handful of requests between processes on one machine:
its tool calls (:class:`passhat.client.RemoteEpisode`) and the harness's POST of the start message
(:class:`passhat.agents.service.ServiceAgent`). Through httpx2 each cost ~0.4 ms of CPU on the calling
side (its connection pool, anyio cancel scopes and h11 state machine serve the general case); here it is
~0.03 ms: the request leaves in one write and the answer is parsed from what the socket gives.

What it does: ``http://`` URLs; keep-alive connections pooled per host and port, for the event loop that
opened them (closed when that loop's ``asyncio.run`` ends); request bodies of known length; answers with a
``Content-Length``, chunked, or read to the end of the connection; a connect timeout, and a deadline for
the whole answer; a cap on the answer's size. What it does not do: TLS, proxies, redirects, compression,
``Expect: 100-continue``. :func:`suitable` says when a URL needs httpx2 instead.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import urllib.request
import weakref
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024
"""Largest status line and headers accepted from a server."""
IDLE_S = 30.0
"""A pooled connection unused this long is closed (the tool server closes its own after 30 s too)."""
REPLAYABLE = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods sent again on a fresh connection when a pooled one closed before any answer (RFC 9110's idempotent
reads: the server may have received the first copy)."""
CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
"""A chunk size as RFC 9112 writes it: hex digits only."""


class HttpError(Exception):
    """The request failed before a whole answer came back."""


class ConnectFailed(HttpError):
    """No connection could be made (refused, unreachable, or not within the connect timeout)."""


class AnswerTimeout(HttpError):
    """The whole answer did not arrive before the request's deadline."""


class BrokenAnswer(HttpError):
    """The server closed the connection mid-answer, or sent something that is not an HTTP/1.x answer."""


class AnswerTooLarge(HttpError):
    """The answer's body is larger than the request allowed (declared so, or sent so)."""


@dataclass(frozen=True)
class Answer:
    """One HTTP answer, read whole."""

    status: int
    headers: dict[str, str]
    """Header names in lower case (a repeated header: the last one)."""
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def suitable(url: str) -> bool:
    """Whether this client can make requests to ``url``: plain ``http://`` that no proxy setting of the
    environment (``HTTP_PROXY`` without a matching ``NO_PROXY``) sends elsewhere."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return False
    return "http" not in urllib.request.getproxies_environment() or bool(urllib.request.proxy_bypass(parts.hostname))


class _Connection(asyncio.Protocol):
    """One keep-alive connection; the bytes received wait in ``buffer`` for the request reading them."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False
        """The server closed its side (or the connection was lost)."""
        self._waiter: asyncio.Future[None] | None = None
        self.idle_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def more(self) -> bool:
        """Wait for more bytes; ``False`` once the server has closed and nothing more will come."""
        if self.ended:
            return False
        before = len(self.buffer)
        self._waiter = asyncio.get_running_loop().create_future()
        await self._waiter
        return len(self.buffer) > before or not self.ended

    @property
    def usable(self) -> bool:
        return not self.ended and self.transport is not None and not self.transport.is_closing() and not self.buffer

    def close(self) -> None:
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None
        if self.transport is not None:
            self.transport.close()


class LocalClient:
    """Plain-HTTP requests over pooled keep-alive connections (module docstring). One per event loop:
    :func:`shared_client`."""

    def __init__(self, *, connect_timeout: float = 10.0, max_idle: int = 32) -> None:
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        """Idle connections kept per host and port."""
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._closed = False

    async def request(self, method: str, url: str, *, body: bytes = b"", json_body: Any = None,
                      headers: Mapping[str, str] | None = None, timeout: float | None = None,
                      max_bytes: int | None = None, resend_if_stale: bool | None = None) -> Answer:
        """Send one request and read its answer whole. ``json_body`` is sent as JSON; ``timeout`` bounds the
        wait for the whole answer (``None``: no bound); ``max_bytes`` caps its body (:class:`AnswerTooLarge`).
        ``resend_if_stale``: send it again on a fresh connection when a pooled one closes before any answer
        (default: only for :data:`REPLAYABLE` methods; say ``True`` only for a server that closes a connection
        silently only before reading a request, as passhat's tool server does)."""
        host, port, target, netloc = _split(url)
        if json_body is not None:
            body = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
        lines = [f"{method} {target} HTTP/1.1", f"host: {netloc}", f"content-length: {len(body)}"]
        if json_body is not None:
            lines.append("content-type: application/json")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        key = (host, port)
        conn, reused = await self._connection(key)
        try:
            answer, keep = await self._exchange(conn, raw, method, timeout, max_bytes)
        except _ClosedBeforeAnswer:
            conn.close()
            if not reused or not (method in REPLAYABLE if resend_if_stale is None else resend_if_stale):
                raise BrokenAnswer(f"{url}: the server closed the connection without answering") from None
            # a pooled connection the server had closed while it was idle: the request most likely never reached
            # it; but a POST that did (a worker that read it, then died) must not be sent twice, so by default
            # only a request that may be repeated is (as Go's client does)
            conn, _ = await self._connection(key, fresh=True)
            try:
                answer, keep = await self._exchange(conn, raw, method, timeout, max_bytes)
            except _ClosedBeforeAnswer:
                conn.close()
                raise BrokenAnswer(f"{url}: the server closed the connection without answering") from None
            except BaseException:
                conn.close()
                raise
        except BaseException:
            conn.close()  # mid-answer (a timeout, a cancellation): the connection's state is unknown
            raise
        if keep:
            self._park(key, conn)
        else:
            conn.close()
        return answer

    async def _connection(self, key: tuple[str, int], *, fresh: bool = False) -> tuple[_Connection, bool]:
        if self._closed:
            raise HttpError("the client is closed")
        idle = self._idle.get(key, [])
        while idle and not fresh:
            conn = idle.pop()
            if conn.idle_timer is not None:
                conn.idle_timer.cancel()
                conn.idle_timer = None
            if conn.usable:
                return conn, True
            conn.close()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, conn = await loop.create_connection(_Connection, key[0], key[1])
        except TimeoutError:
            raise ConnectFailed(f"{key[0]}:{key[1]}: no connection within {self.connect_timeout:g} s") from None
        except OSError as exc:
            raise ConnectFailed(f"{key[0]}:{key[1]}: {exc.strerror or exc}") from exc
        return conn, False

    def _park(self, key: tuple[str, int], conn: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if self._closed or len(idle) >= self.max_idle:
            conn.close()
            return
        idle.append(conn)
        conn.idle_timer = asyncio.get_running_loop().call_later(IDLE_S, self._expire, key, conn)

    def _expire(self, key: tuple[str, int], conn: _Connection) -> None:
        conn.idle_timer = None
        idle = self._idle.get(key, [])
        if conn in idle:
            idle.remove(conn)
        conn.close()

    async def _exchange(self, conn: _Connection, raw: bytes, method: str, timeout: float | None,
                        max_bytes: int | None) -> tuple[Answer, bool]:
        assert conn.transport is not None
        conn.transport.write(raw)
        try:
            async with asyncio.timeout(timeout):
                return await _read_answer(conn, method, max_bytes)
        except TimeoutError:
            raise AnswerTimeout(f"no whole answer within {timeout:g} s") from None

    def close_idle(self) -> None:
        """Close every pooled connection (requests in flight keep theirs)."""
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()

    async def aclose(self) -> None:
        self._closed = True
        self.close_idle()


@functools.lru_cache(maxsize=1024)
def _split(url: str) -> tuple[str, int, str, str]:
    """``url``'s host, port, request target and ``Host`` value (kept: an agent service's URL is the same for every
    trial, and ``urlsplit`` is a tenth of what the harness spends on the start message's POST)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"{url!r}: this client speaks plain http:// only")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, target, parts.netloc


class _ClosedBeforeAnswer(Exception):
    """The connection ended before the first byte of an answer."""


async def _read_answer(conn: _Connection, method: str, max_bytes: int | None) -> tuple[Answer, bool]:
    """The answer on ``conn`` and whether the connection can carry another request."""
    while True:
        end = conn.buffer.find(b"\r\n\r\n")
        while end < 0:
            if len(conn.buffer) > MAX_HEAD:
                raise BrokenAnswer(f"the answer's head is larger than {MAX_HEAD} bytes")
            if not await conn.more():
                if not conn.buffer:
                    raise _ClosedBeforeAnswer
                raise BrokenAnswer("the server closed the connection in the middle of the answer's head")
            end = conn.buffer.find(b"\r\n\r\n")
        head = bytes(conn.buffer[:end]).decode("latin-1")
        del conn.buffer[:end + 4]
        status_line, *fields = head.split("\r\n")
        version, _, rest = status_line.partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise BrokenAnswer(f"not an HTTP/1.x answer: {status_line[:80]!r}")
        status = int(code)
        headers: dict[str, str] = {}
        for field in fields:
            name, _, value = field.partition(":")
            headers[name.strip().lower()] = value.strip()
        if not 100 <= status < 200 or status == 101:
            break  # an interim answer (100 Continue) is followed by the real one
    keep = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    if method == "HEAD" or status in (204, 304):
        return Answer(status, headers, b""), keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return Answer(status, headers, await _chunked(conn, max_bytes)), keep
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise BrokenAnswer(f"content-length {length!r} is not a number")
        size = int(length)
        _check_size(size, max_bytes, declared=True)
        while len(conn.buffer) < size:
            if not await conn.more():
                raise BrokenAnswer(f"the server closed the connection after {len(conn.buffer)} of {size} bytes")
        body = bytes(conn.buffer[:size])
        del conn.buffer[:size]
        return Answer(status, headers, body), keep
    while await conn.more():  # no length: the body ends with the connection
        _check_size(len(conn.buffer), max_bytes, declared=False)
    _check_size(len(conn.buffer), max_bytes, declared=False)
    body = bytes(conn.buffer)
    conn.buffer.clear()
    return Answer(status, headers, body), False


async def _chunked(conn: _Connection, max_bytes: int | None) -> bytes:
    out = bytearray()
    while True:
        end = conn.buffer.find(b"\r\n")
        while end < 0:
            if len(conn.buffer) > MAX_HEAD:
                raise BrokenAnswer(f"a chunk-size line longer than {MAX_HEAD} bytes")
            if not await conn.more():
                raise BrokenAnswer("the server closed the connection in the middle of a chunked body")
            end = conn.buffer.find(b"\r\n")
        size_text = bytes(conn.buffer[:end]).split(b";", 1)[0].strip()
        if not CHUNK_SIZE.fullmatch(size_text):  # int(…, 16) would take "-5", "0x10" and "1_0"
            raise BrokenAnswer(f"bad chunk size {size_text[:20]!r}")
        size = int(size_text, 16)
        del conn.buffer[:end + 2]
        if size == 0:  # the last chunk: skip the trailer fields up to the empty line
            skipped = 0
            while (end := conn.buffer.find(b"\r\n")) != 0:
                if end > 0:
                    skipped += end + 2
                    del conn.buffer[:end + 2]
                elif not await conn.more():
                    raise BrokenAnswer("the server closed the connection in a chunked body's trailer")
                if skipped + len(conn.buffer) > MAX_HEAD:
                    raise BrokenAnswer(f"a chunked body's trailer longer than {MAX_HEAD} bytes")
            del conn.buffer[:2]
            return bytes(out)
        _check_size(len(out) + size, max_bytes, declared=False)
        while len(conn.buffer) < size + 2:
            if not await conn.more():
                raise BrokenAnswer("the server closed the connection in the middle of a chunk")
        out += conn.buffer[:size]
        del conn.buffer[:size + 2]


def _check_size(size: int, max_bytes: int | None, *, declared: bool) -> None:
    if max_bytes is not None and size > max_bytes:
        raise AnswerTooLarge(f"declared {size:,} bytes" if declared else f"more than {max_bytes:,} bytes")


_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LocalClient] = weakref.WeakKeyDictionary()


async def _until_loop_ends(client: LocalClient) -> AsyncIterator[None]:
    """An async generator left suspended: ``asyncio.run`` closes every such generator of its loop as it
    ends, which closes the client's connections while the loop can still close them."""
    try:
        yield
    finally:
        client.close_idle()
        _SHARED.pop(asyncio.get_running_loop(), None)


async def shared_client() -> LocalClient:
    """The running event loop's client: every episode and agent of a process shares its connections."""
    loop = asyncio.get_running_loop()
    client = _SHARED.get(loop)
    if client is None:
        client = _SHARED[loop] = LocalClient()
        keeper = _until_loop_ends(client)
        await keeper.__anext__()
        client._keeper = keeper  # type: ignore[attr-defined]  # kept alive with the client
    return client


__all__ = ["Answer", "AnswerTimeout", "AnswerTooLarge", "BrokenAnswer", "ConnectFailed", "HttpError", "LocalClient",
           "shared_client", "suitable"]
