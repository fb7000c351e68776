"""httpx2 clients whose answers are read within a size cap, for bodies someone else writes: a model provider's
stream (through the OpenAI and Anthropic SDKs) and an upstream MCP server over HTTP.

The SDKs read what the server sends without a bound: an SSE line that never ends is buffered whole while
it grows (one line with no newline from a local server reached 12 GB in 20 s), and a stall check does not
fire while bytes keep coming. The cap is a response event hook that wraps the body's stream, so it holds
whatever transport, proxy or SDK sits around the client: past ``limit`` bytes the stream raises the
caller's error and the connection is dropped. It counts bytes as they arrive; the client asks for them
uncompressed (``accept-encoding: identity``), so a small compressed answer cannot inflate past it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2

MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The largest answer read from a model provider or an upstream server (64 MB): a model's whole answer is
a few hundred KB, a tool's result rarely more; the model relay holds answers to the same 64 MB."""

Hook = Callable[[httpx2.Response], Awaitable[None]]


class _Capped(httpx2.AsyncByteStream):
    """A body stream that raises ``too_large()`` once more than ``limit`` bytes came through it."""

    def __init__(self, stream: Any, limit: int, too_large: Callable[[], Exception]) -> None:
        self.stream, self.limit, self.too_large = stream, limit, too_large

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for part in self.stream:
            seen += len(part)
            if seen > self.limit:
                raise self.too_large()
            yield part

    async def aclose(self) -> None:
        await self.stream.aclose()


def capped_options(too_large: Callable[[], Exception], limit: int | None = None) -> dict[str, Any]:
    """Keyword arguments for an ``httpx2.AsyncClient`` (or an SDK's default client) that read every answer
    within ``limit`` bytes (default :data:`MAX_ANSWER_BYTES`, read when the answer starts, so a test can
    lower it), raising ``too_large()`` past it."""

    async def cap(response: httpx2.Response) -> None:
        response.stream = _Capped(response.stream, MAX_ANSWER_BYTES if limit is None else limit, too_large)

    hooks: dict[str, list[Hook]] = {"response": [cap]}
    return {"event_hooks": hooks, "headers": {"accept-encoding": "identity"}}


__all__ = ["MAX_ANSWER_BYTES", "capped_options"]
