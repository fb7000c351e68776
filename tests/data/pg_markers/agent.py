"""Agents for the marker domain: each writes a marker named after its own seed, slowly or not."""

import asyncio

from passhat.episode import Episode


def account_of(seed: int) -> int:
    return seed % 2000 + 1


async def marker(episode: Episode) -> str:
    await asyncio.sleep(0.02)  # trials overlap: -j 16 keeps 16 databases in use at once
    result = await episode.call("mark", {"label": f"m-{episode.seed}", "account_id": account_of(episode.seed)})
    await asyncio.sleep(0.02)
    return f"marked, saw {result.content}"


async def slow_marker(episode: Episode) -> str:
    await asyncio.sleep(0.4)  # long enough to be killed in the middle of a run
    return await marker(episode)
