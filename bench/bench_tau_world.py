"""An imported τ-bench suite against τ-bench's own Env, side by side on the gold actions (issue 23 item 2).

For every task of retail test and airline test, one round plays the task's gold script (its actions, then
a message with its outputs: passhat.tau_bench.perturb) once on τ-bench's ``Env`` (in its own process,
bench/tau_env_worker.py) and once through passhat's trial path (``run_trial``: world reset, the calls
through the tool boundary, diff, grading, world closed), alternating, so the machine's load moves both
alike. Printed:

- per trial: the mean wall time on each side and τ-bench's over passhat's (goal: ≥ 50× on retail);
- per call: each tool's median time on both sides, τ-bench's being its ``invoke`` alone and passhat's the
  whole call at the boundary (validation, savepoint, the JSON view, change log), and the worst call of
  each tool against the goal ``passhat ≤ 3 × τ-bench + 0.3 ms`` (medians over the rounds of each call);
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
from tau_harness import TauEnv, checkout_arguments, digest, import_suites, passhat_trial, require_checkout  # noqa: E402

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


def run_suite(tau: TauEnv, env: str, split: str, suite: object, rounds: int, limit: int) -> bool:
    plays = [s["gold"] for s in scripts(suite.tasks, suite.tools())]  # type: ignore[attr-defined]
    indices = range(len(plays) if limit <= 0 else min(limit, len(plays)))
    first: list[float] = []
    tau_ms: dict[int, list[float]] = defaultdict(list)
    ph_ms: dict[int, list[float]] = defaultdict(list)
    calls: dict[tuple[int, int], tuple[str, list[float], list[float]]] = {}
    problems: list[str] = []
    for r in range(rounds + 1):  # round 0 warms both sides up (and fills passhat's reference cache)
        for i in indices:
            answer = tau.trial(env, split, i, plays[i], digest=r == 0)
            record, ms = passhat_trial(suite, i, plays[i])  # type: ignore[arg-type]
            if answer["reward"] != 1.0 or record.outcome != "pass":
                problems.append(f"task {i}: τ-bench reward {answer['reward']}, passhat {record.outcome} "
                                f"{[g.reason for g in record.grades if not g.passed]}")
            if r == 0:
                first.append(ms)
                if answer["digest"] != digest(suite, record):  # type: ignore[arg-type]
                    problems.append(f"task {i}: final data differs from τ-bench's")
                continue
            tau_ms[i].append(answer["ms"])
            ph_ms[i].append(ms)
            for j, (call, theirs) in enumerate(zip(record.calls, answer["tools"], strict=True)):
                name, mine, their = calls.setdefault((i, j), (call.tool, [], []))
                mine.append(call.duration_ms)
                if theirs is not None:
                    their.append(theirs)
    report(env, split, suite, len(indices), rounds, first, tau_ms, ph_ms, calls)
    for p in problems[:10]:
        print("  PROBLEM", p)
    return not problems


def report(env: str, split: str, suite: object, n: int, rounds: int, first: list[float],
           tau_ms: dict[int, list[float]], ph_ms: dict[int, list[float]],
           calls: dict[tuple[int, int], tuple[str, list[float], list[float]]]) -> None:
    tau_mean = statistics.fmean(x for v in tau_ms.values() for x in v)
    ph_mean = statistics.fmean(x for v in ph_ms.values() for x in v)
    per_task = [statistics.median(tau_ms[i]) / statistics.median(ph_ms[i]) for i in tau_ms]
    print(f"\n{env} {split}: {n} tasks × {rounds} rounds (suite loaded in {suite.load_s * 1000:.0f} ms; "  # type: ignore[attr-defined]
          f"first trial of each case: mean {statistics.fmean(first):.1f} ms)")
    ratio = tau_mean / ph_mean
    goal = f"goal ≥ {GOAL_TRIAL:.0f}×: {'met' if ratio >= GOAL_TRIAL else 'NOT met'}" if env == "retail" else ""
    print(f"  per trial: τ-bench {tau_mean:.1f} ms, passhat {ph_mean:.2f} ms → {ratio:.1f}× "
          f"(median of per-task ratios {statistics.median(per_task):.1f}×) {goal}")
    by_tool: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for name, mine, theirs in calls.values():
        if mine and theirs:
            by_tool[name].append((statistics.median(theirs), statistics.median(mine)))
    a, b = GOAL_CALL
    print(f"  {'tool':34} {'calls':>5} {'τ-bench ms':>11} {'passhat ms':>11} {'worst: passhat / (3τ+0.3)':>27}")
    over = 0
    for name, pairs in sorted(by_tool.items()):
        worst = max(pairs, key=lambda p: p[1] / (a * p[0] + b))
        over += sum(p[1] > a * p[0] + b for p in pairs)
        print(f"  {name:34} {len(pairs):5d} {statistics.median(p[0] for p in pairs):11.3f} "
              f"{statistics.median(p[1] for p in pairs):11.3f} "
              f"{worst[1] / (a * worst[0] + b):9.2f} ({worst[1]:.3f} vs {worst[0]:.3f} ms)")
    total = sum(len(p) for p in by_tool.values())
    print(f"  calls over 3 × τ-bench + 0.3 ms: {over} of {total}")


if __name__ == "__main__":
    main()
