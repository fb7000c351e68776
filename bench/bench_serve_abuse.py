"""What strangers on 127.0.0.1 can make the tool server do, and what it costs a trial meanwhile.

One tool server with one open trial (refunds/refund-4812) in this process; the abuse comes from processes of
its own, as a stranger's would. Printed:

- a 32 MiB header probe: the prober's time until refused (431), the server's CPU per probe, and the growth
  of this process's memory over all probes (before the head was bounded: 26.7 s of the event loop and
  128 MB per probe);
- the trial's calls (httpx2, as an agent makes them) while probes arrive every PAUSE ms and with no pause at
  all: median ms per call and its ratio to the same calls without probes, rounds interleaved (issue 21: at
  most 2×; ``tests/serve/test_limits.py`` checks it at a 5 ms pause);
- silent connections (connect, say nothing) and slow heads: how long they are held (the head deadline), and
  that a real request still gets in at the connection cap (``HttpLimits.max_connections``);
- deep nesting: ~200 KB of ``[[[…]]]`` on the tool, ``/user`` and ``/otlp`` routes: the status and the
  server's time (before: a 500 and a traceback).

Run: ``python bench/bench_serve_abuse.py [--probes 100] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import statistics
import sys
import time

import httpx2

from passhat.cases import load_suite
from passhat.episode import Episode
from passhat.runner.trial import run_trial
from passhat.serve import ToolServer, TrialEndpoint
from passhat.serve.http11 import HttpLimits

PROBER = """
import socket, sys, time
port, count, pause = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
header = b"GET /trials/x HTTP/1.1\\r\\nx-probe: " + b"a" * (32 << 20)
n = 0
while count == 0 or n < count:
    if pause:
        time.sleep(pause)
    t = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(header)
        except OSError:
            pass
        answer = sock.recv(64)
    n += 1
    sys.stdout.write("%s %.6f\\n" % (answer[:12].decode("latin-1").replace(" ", "_"), time.perf_counter() - t))
    sys.stdout.flush()
"""
"""A stranger: COUNT probes (0: until killed), PAUSE seconds apart; one line per probe (answer, seconds)."""


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def probes_alone(server: ToolServer, count: int) -> None:
    rss0, c0 = rss_mb(), os.times()
    prober = await asyncio.create_subprocess_exec(sys.executable, "-c", PROBER, str(server.port), str(count), "0",
                                                  stdout=asyncio.subprocess.PIPE)
    out, _ = await prober.communicate()
    c1 = os.times()
    lines = [line.split() for line in out.decode().splitlines()]
    refused = sum(1 for answer, _ in lines if answer.startswith("HTTP/1.1_431"))
    times = [float(t) for _, t in lines]
    print(f"32 MiB header probes: {len(lines)} sent, {refused} refused with 431; the prober's time per probe: median "
          f"{statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")
    print(f"  the server's CPU per probe: {(c1.user - c0.user) / len(lines) * 1000:.2f} ms user, "
          f"{(c1.system - c0.system) / len(lines) * 1000:.2f} ms system (kernel work on the prober's data included); "
          f"this process's peak memory grew {rss_mb() - rss0:.0f} MB over all probes")


async def calls_under_flood(endpoint: TrialEndpoint, port: int, rounds: int, pause_ms: float) -> None:
    calls = 9
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {endpoint.token}"}, timeout=30) as http:
        async def timed() -> list[float]:
            times = []
            for _ in range(calls):
                t = time.perf_counter()
                (await http.post(f"{endpoint.url}/tools/get_order", json={"order_id": 4812})).raise_for_status()
                times.append(time.perf_counter() - t)
            return times

        for label, pause in ((f"probes {pause_ms:g} ms apart", pause_ms / 1000), ("probes with no pause", 0.0)):
            quiet: list[float] = []
            noisy: list[float] = []
            for _ in range(rounds):
                quiet += await timed()
                prober = await asyncio.create_subprocess_exec(sys.executable, "-c", PROBER, str(port), "0", str(pause),
                                                              stdout=asyncio.subprocess.PIPE)
                assert prober.stdout is not None
                await prober.stdout.readline()  # the flood is on
                noisy += await timed()
                prober.kill()
                await prober.wait()
            q, n = statistics.median(quiet), statistics.median(noisy)
            print(f"another trial's calls, {label}: median {q * 1000:.2f} ms without, {n * 1000:.2f} ms with "
                  f"({n / q:.2f}×; goal ≤ 2×)")


def hold(port: int, data: bytes, count: int) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        if data:
            sock.sendall(data)
        socks.append(sock)
    return socks


async def slow_clients(endpoint: TrialEndpoint) -> None:
    limits = HttpLimits(head_timeout_s=1.0, max_connections=64)
    async with ToolServer(mcp=False, limits=limits) as server:
        loop = asyncio.get_running_loop()
        for label, data in (("silent", b""), ("slow head", b"GET /trials/x HTTP/1.1\r\nhost: a\r\n")):
            socks = await loop.run_in_executor(None, hold, server.port, data, 32)
            t = time.perf_counter()
            answers = await loop.run_in_executor(None, _first_bytes, socks)
            held = time.perf_counter() - t
            for s in socks:
                s.close()
            kinds = {a[:12].decode() or "closed" for a in answers}
            print(f"{label} connections (32, head deadline {limits.head_timeout_s:g} s): closed after {held:.2f} s, "
                  f"answered {sorted(kinds)}")
        socks = await loop.run_in_executor(None, hold, server.port, b"", limits.max_connections)
        await asyncio.sleep(0.05)
        assert server.service is not None
        async with httpx2.AsyncClient(timeout=30) as http:
            got = await http.get(f"{server.base_url}/trials/x")
        await asyncio.sleep(0.05)  # the eviction's close reaches the socket
        closed = sum(1 for s in socks if _closed(s))
        for s in socks:
            s.close()
        print(f"at the cap ({limits.max_connections} silent connections open): a new request got {got.status_code} "
              f"(401: routed), {closed} silent one(s) closed to make room")


def _first_bytes(socks: list[socket.socket]) -> list[bytes]:
    return [s.recv(4096) for s in socks]


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (asked at once: the head deadline would close them all later)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


async def deep_nesting(endpoint: TrialEndpoint) -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {endpoint.token}"}, timeout=30) as http:
        for route in ("tools/get_order", "user", "otlp/v1/traces"):
            t = time.perf_counter()
            got = await http.post(f"{endpoint.url}/{route}", content=body, headers={"content-type": "application/json"})
            print(f"200 KB of nesting on /{route}: {got.status_code} in {(time.perf_counter() - t) * 1000:.1f} ms: "
                  f"{got.text[:90]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pause-ms", type=float, default=5.0)
    args = parser.parse_args()
    suite = load_suite("refunds")
    case = next(c for c in suite.cases if c.id == "refund-4812")

    async def go() -> None:
        async with ToolServer() as server:
            async def agent(episode: Episode) -> str:
                episode._max_steps = 10**6  # type: ignore[attr-defined]  # the bench's calls are many
                async with server.trial(episode) as endpoint:
                    await probes_alone(server, args.probes)
                    await calls_under_flood(endpoint, server.port, args.rounds, args.pause_ms)
                    await slow_clients(endpoint)
                    await deep_nesting(endpoint)
                return "done"

            await run_trial(case, suite.domain_of(case), agent, 0, 0)

    asyncio.run(go())


if __name__ == "__main__":
    main()
