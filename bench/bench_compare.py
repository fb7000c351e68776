"""Time ``passhat compare``'s statistics on 10,000 cases × 16 trials: 32 metrics (pass^k, pass@k, k = 1..16).

Run: ``python bench/bench_compare.py``. Prints seconds for

- before: one paired BCa bootstrap per metric (32 bootstraps over 10,000 cases), how ``compare``
  worked until design 004 (emulated with ``interval="bca"`` one metric at a time);
- the paired BCa batched: every metric read off one set of shared resamples (``interval="bca"``);
- the default: t-intervals over cases (Tango's score interval for the 0/1 metrics pass^16 and
  pass@16), each united with the pseudo-case interval (design note 006), closed-form, no resampling;
- the whole comparison (new failures, metrics, changes) with the default.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from passhat.compare import comparison
from passhat.compare.paired import compare_metric, compare_metrics
from passhat.compare.runs import LoadedRun, Matching
from passhat.results.tally import CaseTally

CASES, TRIALS = 10_000, 16
KS = range(1, TRIALS + 1)


def simulated_run(passes: np.ndarray, name: str) -> LoadedRun:
    tallies = {f"c{i:05d}": CaseTally(f"c{i:05d}", passes=int(c), fails=TRIALS - int(c)) for i, c in enumerate(passes)}
    manifest = {"suite": {"name": "bench", "hash": "h", "cases": dict.fromkeys(tallies, "x")}, "agent": name,
                "trials": TRIALS, "seed": 0, "status": "complete"}
    return LoadedRun(Path(name), manifest, tallies)


def timed(label: str, fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    print(f"{label:<62} {seconds:7.3f} s")
    return seconds


def main() -> None:
    rng = np.random.default_rng(0)
    p = rng.beta(4, 1.5, CASES)
    base = simulated_run(rng.binomial(TRIALS, p), "base")
    cand = simulated_run(rng.binomial(TRIALS, np.clip(p - 0.02, 0, 1)), "cand")
    ids = list(base.tallies)
    print(f"{CASES} cases × {TRIALS} trials, {2 * TRIALS} metrics, 2000 resamples where a bootstrap is used")

    def one_bootstrap_per_metric() -> None:
        for family in ("pass_hat_k", "pass_at_k"):
            for k in KS:
                compare_metric(base, cand, ids, family, k, seed=0, confidence=0.95, interval="bca")

    before = timed("before: one paired BCa bootstrap per metric (32 bootstraps)", one_bootstrap_per_metric)
    batched = timed("paired BCa, all metrics on shared resamples (interval='bca')",
                    lambda: compare_metrics(base, cand, ids, KS, seed=0, confidence=0.95, interval="bca"))
    default = timed("default: t over cases, Tango for 0/1 metrics",
                    lambda: compare_metrics(base, cand, ids, KS, seed=0, confidence=0.95))
    timed("whole comparison (changes, metrics), default",
          lambda: comparison(base, cand, Matching(ids, [], True), seed=0))
    print(f"speed-up: batched BCa {before / batched:.0f}×, default {before / default:.0f}× over one bootstrap per metric")


if __name__ == "__main__":
    main()
