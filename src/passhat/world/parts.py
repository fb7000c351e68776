"""Opening every part of a fixture's world (one copy per image), all or none.

A fixture's world has a part per kind it holds (a database, a folder). Opening, rebuilding and, on a
failure half-way, discarding them is the same whatever the kinds, so it is written once here: a part
opened before a later one fails is discarded, never leaked (a folder left on disk, a database left on
a server). Async callers open blocking kinds in a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from passhat.world.kind import WorldCopy, WorldImage


def open_parts(images: Sequence[WorldImage[Any]]) -> list[WorldCopy[Any]]:
    """A fresh copy of every image, in order."""
    parts: list[WorldCopy[Any]] = []
    try:
        for image in images:
            parts.append(image.open())
    except BaseException:
        discard_parts(parts)
        raise
    return parts


async def open_parts_async(images: Sequence[WorldImage[Any]]) -> list[WorldCopy[Any]]:
    """:func:`open_parts` from async code: blocking kinds in a thread, the rest on the loop's thread."""
    parts: list[WorldCopy[Any]] = []
    try:
        for image in images:
            parts.append(await _off_loop(image.open) if image.blocking else image.open())
    except BaseException:
        for part in parts:
            if part.blocking:
                await asyncio.to_thread(part.discard)
            else:
                part.discard()
        raise
    return parts


def rebuild_parts(images: Sequence[WorldImage[Any]], recorded: Callable[[WorldImage[Any]], Any]) -> list[WorldCopy[Any]]:
    """Every image's copy with its recorded diff applied (``recorded(image)``; ``None``: a fresh copy)."""
    parts: list[WorldCopy[Any]] = []
    try:
        for image in images:
            diff = recorded(image)
            parts.append(image.rebuild(diff) if diff is not None else image.open())
    except BaseException:
        discard_parts(parts)
        raise
    return parts


def discard_parts(parts: Sequence[WorldCopy[Any]]) -> None:
    for part in parts:
        part.discard()


async def _off_loop(open_part: Callable[[], WorldCopy[Any]]) -> WorldCopy[Any]:
    """``open_part()`` in a thread. A cancellation does not stop the thread: the part it finishes after its
    trial is gone is discarded there, so no copy (a folder, a database) outlives its trial."""
    future = asyncio.ensure_future(asyncio.to_thread(open_part))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        def discard(done: asyncio.Future[WorldCopy[Any]]) -> None:
            if not done.cancelled() and done.exception() is None:
                done.result().discard()

        future.add_done_callback(discard)
        raise
