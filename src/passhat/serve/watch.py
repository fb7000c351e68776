"""Watching for a client that goes away, and telling when it did relative to the call.

An agent elsewhere can give up on a call at any moment: before the server gets to it (it sent the request
and closed at once), while the tool runs, or after the answer is ready but before it is sent. The server
learns of it only when the event loop reads the close from the socket, so the watch lets the loop catch up
(:func:`settle`) before the call starts and before the answer goes out: a close that had already arrived
is seen where it happened, not later, and the record says ``abandoned`` with the moment (``before``,
``during`` or ``after`` the call).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
SETTLE_TURNS = 4
"""Event-loop turns that let a close already in the socket reach the request: the loop reads the socket
(EOF), the server marks the request disconnected, the watch wakes — three turns; one more for margin."""


async def settle() -> None:
    """Give the event loop a few turns, so what the client has already done (closing, above all) is seen."""
    for _ in range(SETTLE_TURNS):
        await asyncio.sleep(0)


class ClientWatch:
    """Notes when the client of one request closes it (``gone_at``, ``time.monotonic()`` seconds).

    Start it once the request body has been read: an ASGI ``receive`` then returns only
    ``http.disconnect``, when the client goes away (or the response has been sent)."""

    def __init__(self, receive: Receive) -> None:
        self.gone_at: float | None = None
        self._task = asyncio.ensure_future(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.gone_at = time.monotonic()

    @property
    def gone(self) -> bool:
        return self.gone_at is not None

    async def wait(self) -> None:
        """Return when the client has gone."""
        await asyncio.shield(self._task)

    def stop(self) -> None:
        self._task.cancel()


class NeverGone(ClientWatch):
    """For a request whose connection passhat cannot watch: it never reports the client gone."""

    def __init__(self) -> None:
        self.gone_at = None
        self._task = asyncio.ensure_future(asyncio.Event().wait())


__all__ = ["ClientWatch", "NeverGone", "settle"]
