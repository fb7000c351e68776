"""CPU until the first trial starts, and for the whole run: ``passhat run refunds --agent careful -k 1``.

Issue 21's goals: the first trial starts within 0.5 s of CPU after the command starts, and the whole run
of the 16-trial refunds suite (summary, report and a gate included) costs at most 1.0 s of CPU. Each run
is a fresh interpreter, as a user's shell starts it. A small import hook wraps ``run_trial`` and prints the
process's own CPU (user + system, from rusage) when the first trial starts; the whole run's CPU is the
child's rusage. A calibration loop (pure Python) is timed before and after, because this machine's speed
varies by up to 1.65× between sessions: compare runs by their ratio to it, or interleave with ``--src``.

Run: ``python bench/bench_first_trial.py [-n 9] [--src PATH] [--gate]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIRST_TRIAL_GOAL_S = 0.5
RUN_GOAL_S = 1.0
SRC = Path(__file__).resolve().parents[1] / "src"
PROBE = r'''
import resource, sys, importlib.abc, importlib.machinery

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

class Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "passhat.runner.trial":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run_module = spec.loader.exec_module
        def exec_module(module):
            run_module(module)
            real, seen = module.run_trial, []
            async def run_trial(*args, **kwargs):
                if not seen:
                    seen.append(1)
                    print(f"FIRST_TRIAL {cpu():.4f}", file=sys.stderr)
                return await real(*args, **kwargs)
            module.run_trial = run_trial
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Hook())
from passhat.cli import main
sys.argv[0] = "passhat"
main()
'''


def calibrate() -> float:
    start = time.process_time()
    sum(i * i for i in range(10**7))
    return time.process_time() - start


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU at the first trial's start, CPU of the whole run) of one fresh ``passhat`` process."""
    with tempfile.TemporaryDirectory() as scratch:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-c", PROBE, *argv, "--out", os.path.join(scratch, "run")], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"passhat {' '.join(argv)} exited {done.returncode}:\n{done.stderr}")
    first = next(float(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("FIRST_TRIAL "))
    return first, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--runs", type=int, default=9, help="runs (median reported, after one warm-up)")
    parser.add_argument("--src", type=Path, default=SRC, help="the src/ folder of the passhat to measure")
    parser.add_argument("--gate", action="store_true", help="also evaluate a one-rule gate at the end")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(args.src), os.environ.get("PYTHONPATH")) if p)}
    argv = ["run", "refunds", "--agent", "careful", "-k", "1", "-q"]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as gate:
        gate.write("name: bench\nrules:\n  - pass_hat_k: {k: 1, min: 0.5}\n")
    if args.gate:
        argv += ["--gate", gate.name]
    calibration = calibrate()
    firsts, wholes = [], []
    for i in range(args.runs + 1):
        first, whole = measure(argv, env)
        if i:
            firsts.append(first)
            wholes.append(whole)
    calibration = (calibration + calibrate()) / 2
    os.unlink(gate.name)
    first, whole = statistics.median(firsts), statistics.median(wholes)
    print(f"passhat from {args.src}: passhat {' '.join(argv)}; median of {args.runs} runs")
    print(f"calibration loop {calibration:.3f} s (0.45-1.17 s seen on this machine)")
    for name, value, goal in (("CPU to the first trial", first, FIRST_TRIAL_GOAL_S), ("CPU of the whole run", whole, RUN_GOAL_S)):
        verdict = "ok" if value <= goal else "over the goal"
        print(f"{name:<24} {value:6.3f} s  {value / goal:5.2f}x the {goal:.1f} s goal  {verdict}"
              f"  ({value / calibration:.2f} calibration loops)")


if __name__ == "__main__":
    main()
