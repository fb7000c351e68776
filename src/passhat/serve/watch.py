"""Watching for a client that goes away, and telling when it did relative to the call.

An agent elsewhere can give up on a call at any moment: before the server gets to it (it sent the request
and closed at once), while the tool runs, or after the answer is ready but before it is sent. The server
learns of it only when the event loop reads the close from the socket. The tool server's connections
(:mod:`passhat.serve.http11`) carry a :class:`Peer` in each request's scope: it notes when the connection was
lost, and can ask the kernel whether a close has arrived that the loop has not read yet (one ``poll``, no
loop turn). The watch checks before the call starts and before the answer goes out (:meth:`ClientWatch.settle`):
a close that had already arrived is seen where it happened, not later, and the record says ``abandoned``
with the moment (``before``, ``during`` or ``after`` the call).

Without a :class:`Peer` (an ASGI server other than passhat's), the watch reads the request's ``receive``
in a task and lets the loop turn a few times instead: the same answers, at about ten times the cost.
"""

from __future__ import annotations

import asyncio
import select
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
SETTLE_TURNS = 4
"""Without a :class:`Peer`: event-loop turns that let a close already in the socket reach the request: the
loop reads the socket (EOF), the server marks the request disconnected, the watch wakes — three turns; one
more for margin."""
PEER = "passhat.peer"
"""The ASGI scope key of the request's :class:`Peer`."""


async def settle() -> None:
    """Give the event loop a few turns, so what the client has already done (closing, above all) is seen."""
    for _ in range(SETTLE_TURNS):
        await asyncio.sleep(0)


_HANGUP = getattr(select, "POLLRDHUP", 0) | select.POLLHUP | select.POLLERR
"""What ``poll`` reports for a peer that has closed its side (Linux: POLLRDHUP) or reset the connection."""


class Peer:
    """The client end of one connection of the tool server, as far as the server can tell."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        sock = transport.get_extra_info("socket")
        self._poll: Any = None
        if sock is not None and _HANGUP & getattr(select, "POLLRDHUP", 0):
            self._poll = select.poll()  # a poll object never closes the descriptor it watches
            self._poll.register(sock.fileno(), _HANGUP)
        # plain ints, read once (the socket's properties convert to enums at every read): the peek's fallback
        self._sock = (int(sock.family), int(sock.type), sock.proto, sock.fileno()) if sock is not None else None
        self.lost_at: float | None = None
        """When the event loop saw the connection end (``time.monotonic()``); ``None`` while it is open."""

    def lost(self) -> None:
        """The protocol's ``connection_lost`` (before the transport closes the descriptor)."""
        if self.lost_at is None:
            self.lost_at = time.monotonic()
        poll, self._poll = self._poll, None
        if poll is not None and self._sock is not None:
            poll.unregister(self._sock[3])

    def gone(self) -> bool:
        """Whether the client has closed or reset the connection, counting a close the loop has not read yet:
        one ``poll`` for a hang-up (or, where there is no POLLRDHUP, one ``recv`` that peeks: an end of
        stream reads as nothing, a pipelined request as data)."""
        if self.lost_at is not None:
            return True
        if self._transport.is_closing():
            return True
        if self._poll is not None:
            return bool(self._poll.poll(0))
        if self._sock is None:
            return False
        # a second socket object on the same descriptor (open while the transport is), detached below: it
        # must never close it
        probe = socket.socket(*self._sock)
        try:
            return probe.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # reset by the peer
            return True
        finally:
            probe.detach()


class ClientWatch:
    """Notes when the client of one request closes it (``gone_at``, ``time.monotonic()`` seconds).

    Start it once the request body has been read: an ASGI ``receive`` then returns only
    ``http.disconnect``, when the client goes away (or the response has been sent)."""

    def __init__(self, receive: Receive, peer: Peer | None = None) -> None:
        self._receive = receive
        self._peer = peer
        self._seen: float | None = None
        self._task: asyncio.Future[Any] | None = None
        if peer is None:
            self._task = asyncio.ensure_future(self._watch(receive))

    @classmethod
    def of(cls, scope: MutableMapping[str, Any], receive: Receive) -> ClientWatch:
        """The watch of the request ``scope`` describes (with its connection's :class:`Peer` when it has one)."""
        peer = scope.get(PEER)
        return cls(receive, peer if isinstance(peer, Peer) else None)

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self._seen = time.monotonic()

    @property
    def gone_at(self) -> float | None:
        lost = self._peer.lost_at if self._peer is not None else None
        if lost is not None and (self._seen is None or lost < self._seen):
            return lost
        return self._seen

    @property
    def gone(self) -> bool:
        return self.gone_at is not None

    async def settle(self) -> None:
        """See a close that has already arrived (the moment it is seen is when it counts as gone)."""
        peer = self._peer
        if peer is None:
            await settle()
        elif self._seen is None and peer.lost_at is None and peer.gone():  # not seen gone yet, and now gone
            self._seen = time.monotonic()

    async def wait(self) -> None:
        """Return when the client has gone."""
        if self._task is None:
            if self.gone_at is not None:
                return
            self._task = asyncio.ensure_future(self._watch(self._receive))
        await asyncio.shield(self._task)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


class NeverGone(ClientWatch):
    """For a request whose connection passhat cannot watch: it never reports the client gone."""

    def __init__(self) -> None:
        self._peer = None
        self._seen = None
        self._task = asyncio.ensure_future(asyncio.Event().wait())

    async def settle(self) -> None:
        """Nothing to see."""


__all__ = ["PEER", "ClientWatch", "NeverGone", "Peer", "settle"]
