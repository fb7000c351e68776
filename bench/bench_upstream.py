"""What an upstream MCP server costs per tool call and per trial.

1. **Proxy overhead per call.** The same tool call on the same running server, with the same client
   session (the ``mcp`` SDK's, over stdio): sent directly with ``call_tool``, and through passhat's tool
   boundary (permissions, JSON Schema check, fault plan, forwarding, result conversion, the record).
   The difference is what passhat adds. Goal: ≤ 2 ms.
2. **Start cost per trial.** From starting a server to the end of ``initialize`` and ``tools/list``, and
   the CPU its process used to get there: the protocol-level notes server of the tests (no SDK), the
   refunds desk on the ``mcp`` SDK (examples/upstream/refunds_pg), the npm filesystem server when it is
   installed (``bash examples/upstream/install-servers.sh``), and a new session on a shared HTTP server
   (``Upstream(shared=True)``: the process is started once per run).

Prints milliseconds and ratios; asserts nothing. Run: ``python bench/bench_upstream.py [--calls N] [--starts N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from passhat.domain import Domain
from passhat.tools import ToolBoundary, ToolContext
from passhat.upstream import Upstream
from passhat.upstream.connection import Connection
from passhat.upstream.session import TrialUpstreams, launch_for
from passhat.upstream.shared import stop_all

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "tests" / "data" / "upstream" / "notes_server.py"
REFUNDS = ROOT / "examples" / "upstream" / "refunds_pg" / "server.py"
SERVERS = Path(os.environ.get("PASSHAT_MCP_SERVERS") or Path.home() / ".cache" / "passhat" / "mcp-servers")
FILESYSTEM = SERVERS / "filesystem" / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def per_call(workspace: Path, calls: int) -> tuple[float, float]:
    """Median milliseconds per ``read_note`` call: direct on the session, and through the boundary."""
    domain = Domain("bench", workspace=workspace, policy="", tools=[],
                    mcp=Upstream(f"stdio:{{python}} {NOTES} {{workspace}}", name="notes"))
    domain.tools  # noqa: B018 (listed once, as a run does)
    world = domain.restore("default", 1)
    upstreams = TrialUpstreams(domain.upstreams, world, identity="bench", seed=1, cwd=None)
    try:
        tools = upstreams.bind(domain.tool_list())
        boundary = ToolBoundary(tools, ToolContext(world, identity="bench"))
        session = await upstreams.connections["notes"].ready()
        direct, proxied = [], []
        for _ in range(calls):  # interleaved, so both see the same machine
            t = time.perf_counter()
            await session.call_tool("read_note", {"name": "todo"})
            direct.append(time.perf_counter() - t)
            t = time.perf_counter()
            record = await boundary.call("read_note", {"name": "todo"})
            proxied.append(time.perf_counter() - t)
            assert record.status == "ok", record.error
        return statistics.median(direct) * 1000, statistics.median(proxied) * 1000
    finally:
        await upstreams.close()
        world.close()


async def starts(name: str, upstream: Upstream, workspace: Path, n: int) -> tuple[float, float]:
    """Median milliseconds to a listed server, and CPU seconds of the server's process per start."""
    domain = Domain("bench", workspace=workspace, policy="", tools=[], mcp=upstream)
    world = domain.restore("default", 1)
    try:
        walls, cpu = [], []
        for i in range(n):
            before = children_cpu()
            connection = Connection(launch_for(upstream, {"workspace": str(workspace), "python": sys.executable,
                                                          "identity": "bench", "seed": str(i)}, None))
            t = time.perf_counter()
            await connection.ready()
            walls.append(time.perf_counter() - t)
            await connection.close()
            cpu.append(children_cpu() - before)
        # a shared server is not a child that has exited: its CPU is the run's, not one trial's
        return statistics.median(walls) * 1000, float("nan") if upstream.shared else statistics.median(cpu)
    finally:
        world.close()


async def main(calls: int, n: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-upstream-"))
    (folder / "notes").mkdir()
    (folder / "notes" / "todo.txt").write_text("call the plumber\n")
    try:
        direct, proxied = await per_call(folder, calls)
        print(f"per call (median of {calls}, read_note on the notes server over stdio)")
        print(f"  direct call_tool       {direct:8.3f} ms")
        print(f"  through the boundary   {proxied:8.3f} ms")
        print(f"  proxy overhead         {proxied - direct:8.3f} ms   (goal ≤ 2 ms; ratio {proxied / direct:.2f}×)")

        servers: list[tuple[str, Upstream]] = [
            ("notes (protocol by hand, Python)", Upstream(f"stdio:{{python}} {NOTES} {{workspace}}", name="notes")),
            ("refunds desk (mcp SDK, Python)", Upstream(f"stdio:{{python}} {REFUNDS}", name="refunds",
                                                       env={"DATABASE_URL": "postgresql:///unused"})),
        ]
        if FILESYSTEM.is_file() and shutil.which("node"):
            servers.append(("server-filesystem (npm, Node)", Upstream(f"stdio:node {FILESYSTEM} {{workspace}}",
                                                                      name="filesystem")))
        else:
            print(f"(server-filesystem not installed at {FILESYSTEM}: bash examples/upstream/install-servers.sh)")
        servers.append(("shared HTTP refunds desk: a new session", Upstream(
            "http://127.0.0.1:{port}/mcp", name="refunds-shared", shared=True,
            start=f"{{python}} {REFUNDS} --http {{port}}", headers={"X-Identity": "{identity}"})))
        print(f"\nper-trial start, initialize + tools/list (median of {n})")
        base = None
        for label, upstream in servers:
            wall, cpu = await starts(label, upstream, folder, n)
            base = base or wall
            print(f"  {label:42s} {wall:8.1f} ms wall  {cpu * 1000:7.0f} ms CPU (server)  {wall / base:6.1f}×")
    finally:
        stop_all()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.starts))

