"""The Ray executor against the local one: throughput with a simulated model latency, and what Ray adds per trial.

An agent that waits LATENCY seconds per model call, CALLS calls per trial (then acts as ``careful``), runs
the built-in refunds suite through ``passhat.evaluate`` (summary included, as a user runs it) at several
-j values with 4 × j trials, locally and on a local Ray cluster started once (every CPU of this machine).
Ideal wall time = ⌈trials ÷ j⌉ × CALLS × LATENCY; efficiency = ideal ÷ wall (for Ray also without the
worker start-up, which a longer run amortises). Then, with no latency and
-j 1, the time per trial of each executor: the difference is Ray's round trip per trial. Worker start-up
(actors loading the suite and building images) is timed apart, on a one-trial run.
Run: ``python bench/bench_ray.py [--latency 0.2] [--calls 3] [--j 64 256 1000]`` (-j is at most 1000).
``--local-only`` measures this machine's executors without Ray instead, ``local`` (one event loop) and
``processes`` (a worker forked per CPU), alternated ``--rounds`` times: issue 21's goal is ≥ 0.8 at -j 256.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import math
import os
import resource
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import passhat
from passhat.agents import reference_agent

CASES = 16
"""Cases in the refunds suite."""
REDACT = True


def slow_agent(latency: float, calls: int) -> Any:
    careful = reference_agent("careful")

    async def agent(episode: Any) -> str | None:  # a closure: Ray ships it to the workers by value
        for _ in range(calls):
            await asyncio.sleep(latency)  # a model call
        return await careful(episode)

    return agent


def timed_run(agent: Any, executor: str, trials: int, j: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        run = passhat.evaluate("refunds", agent, trials=trials, concurrency=j, out=Path(tmp) / "run", sanity=False,
                               redact=REDACT, executor=executor, name="slow")  # type: ignore[arg-type]
        wall = time.perf_counter() - t
        return wall, run.summary.suite.trials + run.summary.suite.errors


def run_queue_s() -> float:
    """Seconds this thread has spent runnable but waiting for a CPU (Linux schedstat; 0 elsewhere)."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except OSError:
        return 0.0


def waves_model(j: int, trials: int, latency: float, cpu: float, *, pipelined: bool) -> float:
    """Predicted wall time of the local executor on one idle core, from the CPU per trial (an eighth of it spent
    before the agent's first wait, the rest after its last): every agent's waits end together, and asyncio runs
    what became ready in order, so a wave's work is done for all j trials before any of them starts its next
    trial's first wait (``pipelined=False``, what happens); ``pipelined=True``: each trial's next one starts
    waiting the moment it is done (what starting a trial's agent at once, not a loop turn later, would give)."""
    before, after = cpu / 8, cpu * 7 / 8
    clock, left, ready, waits = 0.0, trials, [], []
    for worker in range(min(j, trials)):
        left -= 1
        clock += before
        heapq.heappush(waits, (clock + latency, worker))
    end = 0.0
    while waits:
        due, worker = heapq.heappop(waits)
        clock = max(clock, due) + after
        end = clock
        if left:
            left -= 1
            if pipelined:
                clock += before
                heapq.heappush(waits, (clock + latency, worker))
            else:
                ready.append(worker)
        if not pipelined and (not waits or waits[0][0] > clock):  # the wave's work is done: the next trials start
            for w in ready:
                clock += before
                heapq.heappush(waits, (clock + latency, w))
            ready = []
    return end


def cpu_s() -> float:
    """CPU seconds of this process and of its reaped children (the processes executor's workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def local_efficiency(args: argparse.Namespace) -> None:
    """The efficiency at each -j of the executors of this machine (the table's left half, without starting Ray):
    ``local`` (one event loop) and ``processes`` (one worker per CPU, forked). On a shared machine the event
    loop's thread also waits for a CPU while other processes run: for ``local`` that wait is printed, and the
    efficiency without it (what this machine gives when idle, as the run's own work is all there is). CPU per
    trial counts the workers' CPU too (and, for ``processes``, sending every record to the run's process)."""
    agent = slow_agent(args.latency, args.calls)
    for executor in args.executors:
        timed_run(slow_agent(0, 0), executor, 1, 1)  # warm-up: imports, the suite, the image
    print(f"simulated latency: {args.calls} calls × {args.latency}s per trial; {CASES} cases × k trials = 4 × j; "
          f"{os.cpu_count()} CPU(s)")
    print(f"{'executor':>10}{'-j':>6}{'trials':>8}{'ideal s':>9}{'wall s':>9}{'eff':>6}{'tr/s':>8}{'CPU ms/trial':>14}"
          f"{'CPU wait s':>12}{'eff w/o wait':>14}{'model: waves':>14}{'pipelined':>11}")
    for _ in range(args.rounds):
        for j in args.j:
            for executor in args.executors:
                k = max(1, 4 * j // CASES)
                trials = CASES * k
                ideal = math.ceil(trials / j) * args.calls * args.latency
                c0, q0 = cpu_s(), run_queue_s()
                wall, n = timed_run(agent, executor, k, j)
                cpu, queued = cpu_s() - c0, run_queue_s() - q0
                assert n == trials
                per_trial = cpu / trials
                row = (f"{executor:>10}{j:>6}{trials:>8}{ideal:>9.2f}{wall:>9.2f}{ideal / wall:>6.2f}{trials / wall:>8.0f}"
                       f"{per_trial * 1000:>14.2f}")
                if executor == "local":
                    waves, pipelined = (ideal / waves_model(j, trials, args.calls * args.latency, per_trial, pipelined=p)
                                        for p in (False, True))
                    row += f"{queued:>12.2f}{ideal / max(wall - queued, ideal):>14.2f}{waves:>14.2f}{pipelined:>11.2f}"
                print(row, flush=True)
    print("model (local only): the efficiency one idle core would give at this CPU per trial (waves_model): as asyncio "
          "runs the trials, and if each trial's next one began waiting at once")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--j", type=int, nargs="+", default=[64, 256, 1000])  # -j is at most 1000
    parser.add_argument("--local-only", action="store_true",
                        help="only this machine's executors (no Ray cluster): their -j efficiency, e.g. issue 21's goal "
                             "at -j 256")
    parser.add_argument("--executors", nargs="+", choices=["local", "processes"], default=["local", "processes"],
                        help="with --local-only: the executors to measure, alternated (default: both)")
    parser.add_argument("--rounds", type=int, default=1, help="with --local-only: times to measure each row, alternated")
    parser.add_argument("--no-fsync", action="store_true",
                        help="diagnostic only: skip the per-record fsync of trials.jsonl, to see the ceiling it sets")
    parser.add_argument("--fsync-ms", type=float, default=0.0,
                        help="diagnostic: add this many ms to every fsync of the driver, to see the writer on a slow "
                             "or busy disk (an idle local SSD syncs in ~0.2 ms, a shared or network disk in 3-10)")
    parser.add_argument("--no-redact", action="store_true",
                        help="diagnostic: no redaction (the driver redacts every record before writing it)")
    args = parser.parse_args()
    if args.no_fsync:
        os.fsync = lambda fd: None  # the driver's process only: the workers never write the run folder
        print("DIAGNOSTIC: fsync disabled, records are not durable")
    if args.fsync_ms and not args.no_fsync:
        real_fsync, delay = os.fsync, args.fsync_ms / 1000

        def slow_fsync(fd: int) -> None:
            time.sleep(delay)  # releases the GIL, as a real fsync does
            real_fsync(fd)

        os.fsync = slow_fsync
        print(f"DIAGNOSTIC: every fsync takes {args.fsync_ms:g} ms longer (a slow disk)")
    global REDACT
    REDACT = not args.no_redact
    if args.local_only:
        local_efficiency(args)
        return
    import ray  # only for the cluster's table: --local-only runs without Ray installed

    t = time.perf_counter()
    ray.init(include_dashboard=False, logging_level="WARNING")
    print(f"{os.cpu_count()} CPU(s); local Ray cluster started in {time.perf_counter() - t:.1f}s "
          f"({int(ray.cluster_resources()['CPU'])} worker processes)")
    agent = slow_agent(args.latency, args.calls)
    startup, _ = timed_run(slow_agent(0, 0), "ray", 1, 1)
    print(f"Ray worker start-up (load suite, build images, build agent), one-trial run: {startup:.2f}s")
    print(f"\nsimulated latency: {args.calls} calls × {args.latency}s per trial; {CASES} cases × k trials = 4 × j")
    print(f"{'-j':>6}{'trials':>8}{'ideal s':>9}{'local s':>9}{'eff':>6}{'tr/s':>8}{'ray s':>9}{'eff':>6}{'tr/s':>8}"
          f"{'ray/local':>11}{'ray eff w/o start-up':>22}")
    for j in args.j:
        k = max(1, 4 * j // CASES)
        trials = CASES * k
        ideal = math.ceil(trials / j) * args.calls * args.latency
        lw, ln = timed_run(agent, "local", k, j)
        rw, rn = timed_run(agent, "ray", k, j)
        assert ln == rn == trials
        print(f"{j:>6}{trials:>8}{ideal:>9.2f}{lw:>9.2f}{ideal / lw:>6.2f}{trials / lw:>8.0f}"
              f"{rw:>9.2f}{ideal / rw:>6.2f}{trials / rw:>8.0f}{rw / lw:>11.2f}{ideal / max(rw - startup, ideal):>22.2f}")
    print("\nper-trial cost without latency, -j 1 (one trial at a time: the round trip is not hidden)")
    zero = slow_agent(0, 0)
    k = 8
    lw, _ = timed_run(zero, "local", k, 1)
    rw, _ = timed_run(zero, "ray", k, 1)
    n = CASES * k
    print(f"local {lw / n * 1000:.1f} ms/trial, ray {rw / n * 1000:.1f} ms/trial (incl. worker start-up once): "
          f"Ray adds {(rw - lw) / n * 1000:.1f} ms/trial")
    ray.shutdown()


if __name__ == "__main__":
    main()
