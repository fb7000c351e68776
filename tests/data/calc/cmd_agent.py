"""The calc fixer as a `cmd:` program: it reaches the trial's tools over HTTP and prints its reply."""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from agents import fixer  # noqa: E402

from passhat.client import RemoteEpisode  # noqa: E402


async def main() -> None:
    async with RemoteEpisode.connect() as episode:
        print(await fixer(episode))  # type: ignore[arg-type]


asyncio.run(main())
