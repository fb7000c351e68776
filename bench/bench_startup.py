"""Start-up time of the command line: ``passhat --help``, ``passhat --version`` and ``import passhat``.

Each command runs in a fresh interpreter, as a user's shell runs it (``python -m passhat`` does what the
``passhat`` console script does, without the wrapper a tool like pyenv may put in front of it); the
median wall and CPU time (user + system, from the child's rusage) of N runs are printed against the
0.3 s goal of issue 11, with a bare ``python -c pass`` for the interpreter's own share. ``--src`` measures
another checkout (e.g. the main branch, for a before/after). ``python -X importtime -m passhat --help``
shows what is left.

Run: ``python bench/bench_startup.py [-n 15] [--src PATH]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_S = 0.3
SRC = Path(__file__).resolve().parents[1] / "src"
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "import passhat": ["-c", "import passhat"],
    "passhat --version": ["-m", "passhat", "--version"],
    "passhat --help": ["-m", "passhat", "--help"],
}


def measure(args: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``python ARGS`` over ``runs`` runs (after one warm-up for the disk cache)."""
    walls, cpus = [], []
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i:
            walls.append(wall)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--runs", type=int, default=15, help="runs per command (median reported)")
    parser.add_argument("--src", type=Path, default=SRC, help="the src/ folder of the passhat to measure")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(args.src), os.environ.get("PYTHONPATH")) if p)}
    print(f"passhat from {args.src}, python {sys.version.split()[0]}, median of {args.runs} runs; goal {GOAL_S:.1f} s")
    print(f"{'command':<20} {'wall s':>8} {'cpu s':>8} {'cpu / goal':>11}")
    for name, argv in COMMANDS.items():
        wall, cpu = measure(argv, env, args.runs)
        verdict = "" if name.startswith("python") else ("  ok" if max(wall, cpu) < GOAL_S else "  over the goal")
        print(f"{name:<20} {wall:>8.3f} {cpu:>8.3f} {cpu / GOAL_S:>10.2f}x{verdict}")


if __name__ == "__main__":
    main()
