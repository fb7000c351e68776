"""Harness overhead of a workspace trial, end to end: the built-in bugfix suite with the careful agent.

Per trial, from the records passhat writes: reset (the private copy of the workspace, off the event
loop), diff (the file-level diff, also off the loop), grade (every check but the commands), the case's
own commands (`python -m pytest -q` on the final tree), and the agent's time (its own test runs
included). Prints medians and P95 in milliseconds and the harness's share of a trial; asserts nothing.
Run: ``python bench/bench_workspace_trials.py [--trials 4] [-j 4]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import passhat


def _p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4, help="trials per case (default 4)")
    parser.add_argument("-j", "--concurrency", type=int, default=4, help="trials at once (default 4)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = passhat.evaluate("bugfix", "careful", trials=args.trials, concurrency=args.concurrency,
                               out=Path(tmp) / "run", sanity=False)
        records = [r for r in run.records() if r.outcome != "error"]
    rows = {
        "reset (copy)": [r.timing.reset_ms for r in records],
        "diff (files)": [r.timing.diff_ms for r in records],
        "grade (no commands)": [r.timing.grade_ms for r in records],
        "case commands": [r.timing.commands_s * 1000 for r in records],
        "agent (incl. its test runs)": [r.timing.agent_s * 1000 for r in records],
        "whole trial": [r.timing.total_s * 1000 for r in records],
    }
    print(f"bugfix × careful: {len(records)} trials, -j {args.concurrency}, "
          f"pass^1 {run.summary.suite.pass_hat_k[1].estimate:.3f}")
    print(f"{'':30} {'median ms':>10} {'P95 ms':>10}")
    for name, xs in rows.items():
        print(f"{name:30} {statistics.median(xs):10.2f} {_p95(xs):10.2f}")
    harness = [r.timing.harness_ms for r in records]
    share = statistics.median(h / (r.timing.total_s * 1000) for h, r in zip(harness, records, strict=True))
    print(f"harness overhead (reset + diff + grade): median {statistics.median(harness):.2f} ms, "
          f"{share:.1%} of a trial")


if __name__ == "__main__":
    main()
