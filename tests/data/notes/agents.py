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
