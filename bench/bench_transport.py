"""What serving the tools over HTTP and MCP costs per trial, versus calling them in-process.

The same case (the refunds suite's ``refund-4812``) and the same six tool calls (get_order,
get_customer, list_refunds, get_approval, issue_refund, send_email) are made three ways through the
real runner path:

- in-process: ``await episode.call(...)``;
- HTTP: ``--agent http://…/http`` — an agent service in its own process (bench/transport_agent.py)
  that GETs the tool list and POSTs the six calls over keep-alive, with httpx2; HTTP-small: the same with
  passhat's own small client (what ``RemoteEpisode`` uses);
- in-process, in all: the same trials through a run (``execute``): each record redacted, encoded and
  appended to ``trials.jsonl`` too — what a trial costs a run. The goal is ≤ 1.5 ms of CPU per trial;
- MCP: ``--agent http://…/mcp`` — the same service, using the official MCP client's ``initialize``
  handshake (``ClientSession``), list_tools and six call_tool on the trial's MCP URL; ``…/mcp-2026``:
  ``mcp.Client`` in its default mode (the 2026-07-28 envelope, as the OpenAI Agents SDK uses it).

Printed per trial: the harness's CPU time — this process: the tool server, the POST to the agent, the
trial itself — split into user time (passhat's Python, and the MCP SDK's) and system time (mostly the
kernel waking the agent's process for each answer), and the wall time end to end (including the agent
process's own client work; it depends on the machine's load). The goals (issue 21) at 6 tool calls: in
all ≤ 1.5 ms per trial; HTTP ≤ 2 ms and MCP ≤ 5 ms added over in-process. Also printed: the start-up cost of a ``cmd:`` program.
Run: ``python bench/bench_transport.py [--trials N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2

from passhat.agents.command import CommandAgent
from passhat.agents.service import ServiceAgent
from passhat.cases import load_suite
from passhat.runner import RunConfig, execute
from passhat.runner.trial import run_trial
from passhat.serve import ToolServer

sys.path.insert(0, str(Path(__file__).parent))
from transport_agent import CALLS  # noqa: E402


async def in_process(episode: Any) -> str:
    for name, args in CALLS:
        await episode.call(name, args)
    return "done"


async def measure(agent: Any, trials: int, expected_calls: int = len(CALLS)) -> tuple[float, float, float]:
    """Median wall, user-CPU and system-CPU ms (this process) per trial, after three warm-up trials."""
    suite = load_suite("refunds")
    case = next(c for c in suite.cases if c.id == "refund-4812")
    domain = suite.domain_of(case)
    wall, user, system = [], [], []
    try:
        for i in range(trials + 3):
            t0, c0 = time.perf_counter(), os.times()
            record = await run_trial(case, domain, agent, i, i)
            c1 = os.times()
            assert len(record.calls) == expected_calls and all(c.status == "ok" for c in record.calls), record.error
            if i >= 3:
                wall.append((time.perf_counter() - t0) * 1000)
                user.append((c1.user - c0.user) * 1000)
                system.append((c1.system - c0.system) * 1000)
    finally:
        close = getattr(agent, "aclose", None)
        if close is not None:
            await close()
    return statistics.median(wall), statistics.mean(user), statistics.mean(system)


def in_all(trials: int) -> tuple[float, float]:
    """Mean user and system CPU ms per trial of a run of ``trials`` trials of the case (-j 8): the trial and
    its record (redaction, encoding, the group-commit's writes). A run's fixed costs (manifest, suite hash)
    are taken out by subtracting a run of a tenth of the trials."""
    suite = load_suite("refunds")
    one = dataclasses.replace(suite, cases=[next(c for c in suite.cases if c.id == "refund-4812")])

    def cpu(k: int) -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as tmp:
            c0 = os.times()
            asyncio.run(execute(RunConfig(suite=one, agent=in_process, agent_spec="six-calls", trials=k, concurrency=8,
                                          out=Path(tmp) / "run")))
            c1 = os.times()
        return c1.user - c0.user, c1.system - c0.system

    cpu(10)  # warm-up: the image, the caches
    small, large = cpu(trials // 10), cpu(trials)
    n = trials - trials // 10
    return (large[0] - small[0]) / n * 1000, (large[1] - small[1]) / n * 1000


@contextlib.contextmanager
def agent_service() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(Path(__file__).parent / "transport_agent.py"), str(port)])
    try:
        for _ in range(200):
            try:
                httpx2.get(f"http://127.0.0.1:{port}/", timeout=0.2)
                break
            except httpx2.HTTPError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait()


MODES = [
    # (row, agent service path, goal in ms of harness CPU added, the tool server's MCP answered by the SDK only)
    ("HTTP", "http", 2.0, False),
    ("HTTP-small", "local", 2.0, False),
    ("MCP", "mcp", 5.0, False),
    ("MCP-2026", "mcp-2026", 5.0, False),
    ("MCP-SDK", "mcp", 5.0, True),
    ("MCP-2026-SDK", "mcp-2026", 5.0, True),
]
"""HTTP: httpx2 in the agent; HTTP-small: passhat's own client (localhttp, what RemoteEpisode uses). The -SDK rows
answer every MCP request with the SDK's server, as before passhat's stateless path (docs/design/025)."""


async def measure_service(url: str, trials: int, sdk_only: bool) -> tuple[float, float, float]:
    server = ToolServer()
    if sdk_only:
        await server.start()
        bridge = server.router.mcp
        if getattr(bridge, "stateless", None) is None:
            raise LookupError("this passhat's MCP has no stateless path to turn off")
        bridge.stateless = None
    return await measure(ServiceAgent(url, server=server), trials)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--only", nargs="+", help="rows to measure (default: all): " + ", ".join(r for r, *_ in MODES))
    args = parser.parse_args()
    base_wall, base_user, base_sys = asyncio.run(measure(in_process, args.trials))
    print(f"refunds/refund-4812, {len(CALLS)} tool calls per trial, {args.trials} trials: wall = median, CPU = mean "
          "(the clock ticks in 10 ms steps, so only means of CPU times are meaningful)")
    print(f"{'transport':<13} {'user CPU ms':>12} {'added':>7} {'system CPU ms':>14} {'added':>7} {'wall ms':>8} "
          f"{'added':>7}")
    print(f"{'in-process':<13} {base_user:>12.2f} {'':>7} {base_sys:>14.2f} {'':>7} {base_wall:>8.2f}")
    all_user, all_sys = in_all(max(100, 2 * args.trials))
    print(f"{'in all':<13} {all_user:>12.2f} {'':>7} {all_sys:>14.2f} {'':>7} {'':>8}   in-process with the record "
          f"written: {all_user + all_sys:.2f} ms, {'within' if all_user + all_sys <= 1.5 else 'OVER'} the 1.5 ms goal")
    try:
        import passhat.serve.mcp  # noqa: F401
    except ImportError:
        print("MCP: skipped (pip install 'passhat[mcp]')")
        rows = [m for m in MODES if not m[1].startswith("mcp")]
    else:
        rows = MODES
    with agent_service() as url:
        for row, path, goal, sdk_only in rows:
            if args.only and row not in args.only:
                continue
            try:
                wall, user, system = asyncio.run(measure_service(f"{url}/{path}", args.trials, sdk_only))
            except (LookupError, AssertionError) as exc:
                print(f"{row:<13} n/a ({type(exc).__name__}: {exc})")
                continue
            added = user + system - base_user - base_sys
            print(f"{row:<13} {user:>12.2f} {user - base_user:>7.2f} {system:>14.2f} {system - base_sys:>7.2f} "
                  f"{wall:>8.2f} {wall - base_wall:>7.2f}   harness CPU added {added:.2f} ms: "
                  f"{'within' if added <= goal else 'OVER'} the {goal:g} ms goal")
    print("system CPU is mostly the kernel waking this process for each request; user CPU is passhat's own Python "
          "and, for the -SDK rows, the MCP SDK's")

    spawn_wall, _, _ = asyncio.run(measure(CommandAgent([sys.executable, "-c", "print('done')"]), 10, expected_calls=0))
    print(f"a cmd: program that does nothing (python -c): {spawn_wall:.0f} ms per trial (process start-up; "
          "--isolate process also imports passhat in the worker)")


if __name__ == "__main__":
    main()
