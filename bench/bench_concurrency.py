"""Concurrency: with a simulated model latency, wall time should approach
trials × calls × latency ÷ concurrency, and memory should not grow with the number of trials.

Runs the built-in refunds suite with an agent that waits LATENCY seconds before each of its tool calls
(as a model would), at several -j values, and prints wall time against the ideal and the ratio.
Run: ``python bench/bench_concurrency.py [--latency 0.02] [--trials 4]``.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from pathlib import Path

from passhat.agents import load_agent
from passhat.cases import load_suite
from passhat.episode import Episode
from passhat.runner import RunConfig, RunStore, execute


def slow_agent(latency: float):  # noqa: ANN201
    careful = load_agent("careful")

    async def agent(episode: Episode) -> str | None:
        real_call = episode.call

        async def call(name: str, arguments: dict | None = None):  # noqa: ANN202
            await asyncio.sleep(latency)  # the model "thinking" before each tool call
            return await real_call(name, arguments)

        episode.call = call  # type: ignore[method-assign]
        return await careful(episode)

    return agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--j", type=int, nargs="+", default=[1, 8, 32, 128])
    args = parser.parse_args()
    suite = load_suite("refunds")
    print(f"{'-j':>4}{'trials':>8}{'calls':>8}{'wall s':>10}{'ideal s':>10}{'ratio':>8}{'maxrss MB':>11}")
    print("(ideal = max(calls × latency ÷ j, the longest trial's own calls × latency))")
    for j in args.j:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run"
            cfg = RunConfig(suite=suite, agent=slow_agent(args.latency), agent_spec="slow-careful",
                            trials=args.trials, concurrency=j, out=out)
            t = time.perf_counter()
            asyncio.run(execute(cfg))
            wall = time.perf_counter() - t
            records = RunStore(out).load()
            calls = sum(len(r.calls) for r in records)
            longest = max(len(r.calls) for r in records) * args.latency
            ideal = max(calls * args.latency / j, longest)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{j:>4}{len(records):>8}{calls:>8}{wall:>10.2f}{ideal:>10.2f}{wall / ideal:>8.2f}{rss:>11.0f}")


if __name__ == "__main__":
    main()
