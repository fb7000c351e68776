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
Run: ``python bench/bench_transport.py [--trials N] [--rounds R]``: every row is measured R times (default 3), each
round against an in-process baseline taken just before it, since the machine's state moves the figures by
~0.5 ms between runs minutes apart; medians are printed, with the rounds' range where a goal is judged.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import math
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


Triple = tuple[float, float, float]
"""(wall ms, user CPU ms, system CPU ms) per trial."""


def measure_round(url: str, rows: list[tuple[str, str, float, bool]], trials: int) -> dict[str, Triple]:
    """One round: the in-process baseline, the run with records, then each row, back to back, so that each row's
    added cost is taken against a baseline measured a few seconds before it, on the same machine state."""
    out: dict[str, Triple] = {"in-process": asyncio.run(measure(in_process, trials))}
    user, system = in_all(max(100, 2 * trials))
    out["in all"] = (math.nan, user, system)
    for row, path, _goal, sdk_only in rows:
        try:
            out[row] = asyncio.run(measure_service(f"{url}/{path}", trials, sdk_only))
        except (LookupError, AssertionError) as exc:
            print(f"{row:<13} n/a ({type(exc).__name__}: {exc})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of every row, each against its own round's in-process baseline (default 3); "
                             "figures are medians over rounds, with the rounds' range")
    parser.add_argument("--only", nargs="+", help="rows to measure (default: all): " + ", ".join(r for r, *_ in MODES))
    args = parser.parse_args()
    try:
        import passhat.serve.mcp  # noqa: F401
    except ImportError:
        print("MCP: skipped (pip install 'passhat[mcp]')")
        rows = [m for m in MODES if not m[1].startswith("mcp")]
    else:
        rows = MODES
    rows = [m for m in rows if not args.only or m[0] in args.only]
    rounds: list[dict[str, Triple]] = []
    with agent_service() as url:
        for _ in range(args.rounds):
            rounds.append(measure_round(url, rows, args.trials))
    print(f"refunds/refund-4812, {len(CALLS)} tool calls per trial, {args.trials} trials per row and round, "
          f"{args.rounds} rounds: wall = median, CPU = mean per trial (the clock ticks in 10 ms steps, so only means "
          "of CPU times are meaningful); each figure is the median over rounds, [the rounds' range] for what is "
          "judged against a goal; 'added' is taken against the same round's in-process row")
    print(f"{'transport':<13} {'user CPU ms':>12} {'added':>7} {'system CPU ms':>14} {'added':>7} {'wall ms':>8} "
          f"{'added':>7}")

    def med(row: str, i: int, minus: str | None = None) -> float:
        return statistics.median(r[row][i] - (r[minus][i] if minus else 0.0) for r in rounds if row in r)

    def spread(values: list[float]) -> str:
        return f"[{min(values):.2f}–{max(values):.2f}]"

    print(f"{'in-process':<13} {med('in-process', 1):>12.2f} {'':>7} {med('in-process', 2):>14.2f} {'':>7} "
          f"{med('in-process', 0):>8.2f}")
    totals = [r["in all"][1] + r["in all"][2] for r in rounds]
    total = statistics.median(totals)
    print(f"{'in all':<13} {med('in all', 1):>12.2f} {'':>7} {med('in all', 2):>14.2f} {'':>7} {'':>8}   in-process "
          f"with the record written: {total:.2f} ms {spread(totals)}, "
          f"{'within' if total <= 1.5 else 'OVER'} the 1.5 ms goal")
    for row, _path, goal, _sdk in rows:
        if not any(row in r for r in rounds):
            continue
        added_each = [r[row][1] + r[row][2] - r["in-process"][1] - r["in-process"][2] for r in rounds if row in r]
        added = statistics.median(added_each)
        print(f"{row:<13} {med(row, 1):>12.2f} {med(row, 1, 'in-process'):>7.2f} {med(row, 2):>14.2f} "
              f"{med(row, 2, 'in-process'):>7.2f} {med(row, 0):>8.2f} {med(row, 0, 'in-process'):>7.2f}   harness CPU "
              f"added {added:.2f} ms {spread(added_each)}: {'within' if added <= goal else 'OVER'} the {goal:g} ms goal")
    print("system CPU is mostly the kernel waking this process for each request; user CPU is passhat's own Python "
          "and, for the -SDK rows, the MCP SDK's")

    spawn_wall, _, _ = asyncio.run(measure(CommandAgent([sys.executable, "-c", "print('done')"]), 10, expected_calls=0))
    print(f"a cmd: program that does nothing (python -c): {spawn_wall:.0f} ms per trial (process start-up; "
          "--isolate process also imports passhat in the worker)")


if __name__ == "__main__":
    main()
