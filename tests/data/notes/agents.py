"""Test agents for the notes domain."""

import asyncio
import time


async def good(ep):
    await ep.call("list_notes")
    r = await ep.call("add_note", {"title": "call mom", "priority": 2})
    return f"I added note {r.content['id']}."


async def twice(ep):
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    return "added"


async def raises(ep):
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    raise ValueError("agent bug")


async def hangs(ep):
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    await asyncio.sleep(3600)


def sync_good(ep):
    ep.call("add_note", {"title": "call mom", "priority": 2})
    return "added it"


def sync_hangs(ep):
    time.sleep(2)
    return "too late"


async def vandal(ep):
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    await ep.call("wipe_audit")
    await ep.call("get_note", {"note_id": "N-2"})
    await ep.call("fly_to_moon", {})
    await ep.call("add_note", {"title": 5})
    await ep.call("broken")
    return "added"


async def looper(ep):
    for _ in range(3):
        await ep.call("list_notes")
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    return "added"


async def spinner(ep):
    while True:
        await ep.call("list_notes")


async def slow(ep):
    await asyncio.sleep(0.15)
    return await good(ep)


async def cpu_bound(ep):
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    while True:  # never awaits: only a process of its own can be stopped
        pass


def sleeps_past_limit(ep):
    ep.call("add_note", {"title": "call mom", "priority": 2})
    time.sleep(3600)


async def exits(ep):
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    raise SystemExit(3)


async def interrupts(ep):
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    raise KeyboardInterrupt


async def cancels_itself(ep):
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    raise asyncio.CancelledError


async def hard_exit(ep):
    import os

    await ep.call("add_note", {"title": "call mom", "priority": 2})
    os._exit(4)


async def pokes_the_world(ep):
    """Tries to write to the database behind the harness's back (works only in-process)."""
    ep._boundary.ctx.db.execute("INSERT INTO notes (id, owner, title, priority) VALUES ('N-99', 'alice', 'call mom', 2)")
    return "added"


async def odd_arguments(ep):
    import numpy as np

    cyclic = {"title": "call mom"}
    cyclic["self"] = cyclic
    await ep.call("add_note", {"title": "x", "priority": np.int64(2), 3: "mixed key", "big": 10**5000, "obj": object()})
    await ep.call("add_note", cyclic)
    await ep.call("add_note", {"title": "call mom", "priority": np.int64(2)})
    return "added"


async def waits_for_release(ep):
    """Blocks until the file named by $RELEASE_FILE exists (tests hold a run open with it)."""
    import os
    from pathlib import Path

    while not Path(os.environ["RELEASE_FILE"]).exists():
        await asyncio.sleep(0.02)
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    return "added"
