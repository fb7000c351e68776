"""``python -m passhat.agents.worker SPEC``: runs a Python agent (``module:function``, a file, or a
built-in reference agent) in a process of its own, for ``--isolate process``.

The agent receives a :class:`passhat.client.RemoteEpisode` — the same surface as the in-process episode —
so it runs unchanged, but whatever it does stays in this process: a CPU-bound loop, ``time.sleep`` past
the limit, ``SystemExit``, ``os._exit`` or poking at private attributes cannot stall or corrupt the run,
because passhat only sees its tool calls and kills the process group at the time limit. The agent's own
prints go to stderr; stdout carries one line, the reply.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from typing import Any

EXIT_AGENT_ERROR = 1
EXIT_SYSTEM_EXIT = 3


async def _run(spec: str, out: Any) -> None:
    from passhat.agents import load_agent
    from passhat.client import RemoteEpisode

    agent = load_agent(spec)
    async with RemoteEpisode.connect() as episode:
        reply = await agent(episode)  # type: ignore[arg-type]
    out.write(json.dumps({"reply": reply if isinstance(reply, str) else None}, ensure_ascii=False) + "\n")
    out.flush()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m passhat.agents.worker module:function", file=sys.stderr)
        return 2
    if os.getcwd() not in sys.path:  # module:function resolves from the working directory, as in `passhat run`
        sys.path.append(os.getcwd())
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the agent's prints (even from C code) go to stderr
    sys.stdout = sys.stderr
    try:
        asyncio.run(_run(args[0], out))
    except SystemExit as exc:
        print(f"the agent raised SystemExit({exc.code!r})", file=sys.stderr)
        return EXIT_SYSTEM_EXIT
    except BaseException:  # noqa: BLE001 - everything the agent does is reported, as a failed trial
        traceback.print_exc()
        return EXIT_AGENT_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
