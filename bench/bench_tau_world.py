"""An imported τ-bench suite against τ-bench's own Env, side by side on the gold actions (issue 23 item 2).

For every task of retail test and airline test, one round plays the task's gold script (its actions, then
a message with its outputs: passhat.tau_bench.perturb) once on τ-bench's ``Env`` (in its own process,
bench/tau_env_worker.py) and once through passhat's trial path (``run_trial``: world reset, the calls
through the tool boundary, diff, grading, world closed), alternating, so the machine's load moves both
alike. Printed:

- per trial: the mean CPU time on each side (each process's own) and τ-bench's over passhat's (goal:
  ≥ 50× on retail), and the same in wall time;
- per call, in CPU time (on a machine shared by more processes than cores, the wall time of a 0.1 ms
  call mostly measures the wait for a core): each tool's median on both sides, τ-bench's being its
  ``invoke`` alone and passhat's the whole call at the boundary (validation, savepoint, the JSON world,
  change log), and the worst call of each tool against the goal ``passhat ≤ 3 × τ-bench + 0.3 ms``
  (each call's median over the rounds). Twice for passhat: the calls of the interleaved trials (each
  right after a τ-bench trial has churned through 5 MB of JSON, so passhat's caches start cold), and the
  same trials again back to back ("warm", as τ-bench's invokes are: each runs right after its own
  reset loaded the data);
- once per process: loading the suite and the first trial of each case (it runs the gold actions once
  for the expected state).

Every trial's verdict is checked (τ-bench reward 1, passhat pass) and, in the first round, its final
data: τ-bench's collections and passhat's fixture-plus-recorded-diff must hash the same.

Run: ``python bench/bench_tau_world.py CHECKOUT [--rounds 5] [--tasks 40]`` (see bench/tau_harness.py for
the τ-bench venv).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from tau_harness import (  # noqa: E402
    Suite,
    TauEnv,
    checkout_arguments,
    digest,
    import_suites,
    passhat_trial,
    require_checkout,
)

from passhat.tau_bench.perturb import scripts  # noqa: E402

SUITES = [("retail", "test"), ("airline", "test")]
GOAL_TRIAL = 50.0
GOAL_CALL = (3.0, 0.3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    checkout_arguments(parser)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=0, help="only the first N tasks of each suite (0: all)")
    args = parser.parse_args()
    checkout, python = require_checkout(args)
    t = time.perf_counter()
    suites = import_suites(checkout, SUITES)
    print(f"imported and loaded {', '.join(f'{e} {s}' for e, s in SUITES)} in {time.perf_counter() - t:.2f} s")
    tau = TauEnv(python, checkout)
    ok = True
    try:
        for (env, split), suite in suites.items():
            ok &= run_suite(tau, env, split, suite, args.rounds, args.tasks)
    finally:
        tau.close()
    sys.exit(0 if ok else 1)


def run_suite(tau: TauEnv, env: str, split: str, suite: Suite, rounds: int, limit: int) -> bool:
    plays = [s["gold"] for s in scripts(suite.tasks, suite.tools())]
    indices = range(len(plays) if limit <= 0 else min(limit, len(plays)))
    first: list[float] = []
    trials: dict[str, list[float]] = defaultdict(list)  # tau / passhat × wall / cpu
    calls: dict[tuple[int, int], tuple[str, list[float], list[float]]] = {}
    warm: dict[tuple[int, int], list[float]] = defaultdict(list)
    problems: list[str] = []
    for r in range(rounds + 1):  # round 0 warms both sides up (and fills passhat's reference cache)
        for i in indices:
            answer = tau.trial(env, split, i, plays[i], digest=r == 0)
            mine = passhat_trial(suite, i, plays[i])
            if answer["reward"] != 1.0 or mine.record.outcome != "pass":
                problems.append(f"task {i}: τ-bench reward {answer['reward']}, passhat {mine.record.outcome} "
                                f"{[g.reason for g in mine.record.grades if not g.passed]}")
            if r == 0:
                first.append(mine.ms)
                if answer["digest"] != digest(suite, mine.record):
                    problems.append(f"task {i}: final data differs from τ-bench's")
                continue
            for side, wall, cpu in (("tau", answer["ms"], answer["cpu_ms"]), ("passhat", mine.ms, mine.cpu_ms)):
                trials[f"{side} wall"].append(wall)
                trials[f"{side} cpu"].append(cpu)
            for j, (call, theirs) in enumerate(zip(mine.record.calls, answer["tools"], strict=True)):
                name, ours, their = calls.setdefault((i, j), (call.tool, [], []))
                ours.append(mine.calls_cpu_ms[j])
                if theirs is not None:
                    their.append(theirs)
    for _ in range(rounds):  # each side warm: passhat's calls again, trial after trial, with no τ-bench in between
        for i in indices:
            mine = passhat_trial(suite, i, plays[i])
            for j, cpu in enumerate(mine.calls_cpu_ms):
                warm[(i, j)].append(cpu)
    report(env, split, suite, len(indices), rounds, first, trials, calls, warm)
    for p in problems[:10]:
        print("  PROBLEM", p)
    return not problems


def report(env: str, split: str, suite: Suite, n: int, rounds: int, first: list[float],
           trials: dict[str, list[float]], calls: dict[tuple[int, int], tuple[str, list[float], list[float]]],
           warm: dict[tuple[int, int], list[float]]) -> None:
    mean = {k: statistics.fmean(v) for k, v in trials.items()}
    print(f"\n{env} {split}: {n} tasks × {rounds} rounds (suite loaded in {suite.load_s * 1000:.0f} ms; "
          f"first trial of each case: mean {statistics.fmean(first):.1f} ms)")
    for kind in ("cpu", "wall"):
        ratio = mean[f"tau {kind}"] / mean[f"passhat {kind}"]
        goal = f"goal ≥ {GOAL_TRIAL:.0f}×: {'met' if ratio >= GOAL_TRIAL else 'NOT met'}" if env == "retail" else ""
        print(f"  per trial ({kind:4}): τ-bench {mean[f'tau {kind}']:.1f} ms, passhat {mean[f'passhat {kind}']:.2f} ms "
              f"→ {ratio:.1f}× {goal if kind == 'cpu' else ''}")
    a, b = GOAL_CALL
    print("  per call, CPU ms (τ-bench: its invoke alone; passhat: the whole call at the boundary), each call's")
    print("  median over the rounds; 'interleaved': the calls of the trials above, each passhat trial right after a")
    print("  τ-bench one that churned through 5 MB of JSON; 'warm': passhat's trials again back to back (τ-bench's")
    print("  invokes are warm already: each runs right after its own reset loaded the data)")
    print(f"  {'tool':32} {'calls':>5} {'τ-bench':>8} {'interleaved':>11} {'warm':>6}   worst call, passhat / "
          "(3 τ-bench + 0.3): interleaved | warm")
    over = {"interleaved": 0, "warm": 0}
    by_tool: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for where, (name, ours, theirs) in calls.items():
        if ours and theirs:
            by_tool[name]["interleaved"].append((statistics.median(theirs), statistics.median(ours)))
            by_tool[name]["warm"].append((statistics.median(theirs), statistics.median(warm[where])))
    for name, kinds in sorted(by_tool.items()):
        worst = {}
        for kind, pairs in kinds.items():
            w = max(pairs, key=lambda p: p[1] / (a * p[0] + b))
            worst[kind] = f"{w[1] / (a * w[0] + b):5.2f} ({w[1]:.3f} vs {w[0]:.3f})"
            over[kind] += sum(p[1] > a * p[0] + b for p in pairs)
        pairs = kinds["interleaved"]
        print(f"  {name:32} {len(pairs):5d} {statistics.median(p[0] for p in pairs):8.3f} "
              f"{statistics.median(p[1] for p in pairs):11.3f} {statistics.median(p[1] for p in kinds['warm']):6.3f}   "
              f"{worst['interleaved']} | {worst['warm']}")
    total = sum(len(k["interleaved"]) for k in by_tool.values())
    print(f"  calls over 3 × τ-bench + 0.3 ms: {over['interleaved']} of {total} interleaved, {over['warm']} warm")


if __name__ == "__main__":
    main()
