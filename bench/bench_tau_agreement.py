"""Do an imported τ-bench suite's verdicts agree with τ-bench's own reward? (issue 23 item 1)

On a real checkout, every task of each suite (retail test, train and dev; airline test) is played as its
gold script and as each perturbation that applies to it (passhat.tau_bench.perturb: a write skipped, an
argument changed, an extra write, a write repeated, a write after a hand-off, outputs missing,
reformatted or inside a longer number, an unknown tool, a read three times), once on τ-bench's ``Env``
(bench/tau_env_worker.py) and once through passhat's trial path. Printed per suite, an agreement table:
per perturbation, the trials, how many τ-bench and passhat pass, how many verdicts agree, and how many
final databases are the same (τ-bench's collections against passhat's fixture plus recorded diff, hashed
with types: ``25`` ≠ ``25.0``). Every disagreement is listed with passhat's failing grades, so it can be
explained. ``--regrade`` also runs each suite's gold scripts as a stored run (redaction on, as by default)
and re-grades it: the number of verdicts changed must be 0.

Run: ``python bench/bench_tau_agreement.py CHECKOUT [--suites retail:test,airline:test] [--every 4]
[--regrade]`` (see bench/tau_harness.py for the τ-bench venv). ``--every K`` plays the perturbations of
every K-th task only of suites with more than 200 tasks (retail train has 500); gold scripts always run
for every task.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from tau_harness import (  # noqa: E402
    Suite,
    TauEnv,
    checkout_arguments,
    digest,
    import_suites,
    passhat_trial,
    replay,
    require_checkout,
)

from passhat import evaluate  # noqa: E402
from passhat.regrade.run import regrade_run  # noqa: E402
from passhat.runner.store import RunStore  # noqa: E402
from passhat.tau_bench.perturb import PERTURBATIONS, scripts  # noqa: E402

DEFAULT = "retail:test,retail:train,retail:dev,airline:test"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    checkout_arguments(parser)
    parser.add_argument("--suites", default=DEFAULT, help=f"env:split,… (default {DEFAULT})")
    parser.add_argument("--every", type=int, default=4, help="perturb every K-th task of suites over 200 tasks")
    parser.add_argument("--regrade", action="store_true", help="also store and re-grade a gold run of each suite")
    args = parser.parse_args()
    checkout, python = require_checkout(args)
    wanted = [tuple(s.split(":")) for s in args.suites.split(",")]
    suites = import_suites(checkout, wanted)  # type: ignore[arg-type]
    tau = TauEnv(python, checkout)
    total = Counter[str]()
    try:
        for key in wanted:
            suite = suites[key]  # type: ignore[index]
            counts = agreement(tau, suite, args.every)
            total.update(counts)
            if args.regrade:
                regrade(suite)
    finally:
        tau.close()
    print(f"\nall suites: {total['agree']} of {total['trials']} verdicts agree with τ-bench's reward; "
          f"final data equal in {total['same_data']} of {total['trials']}")


def agreement(tau: TauEnv, suite: Suite, every: int) -> Counter[str]:
    t = time.perf_counter()
    plays = scripts(suite.tasks, suite.tools())
    rows: dict[str, Counter[str]] = {p: Counter() for p in PERTURBATIONS}
    disagreements: list[str] = []
    for i, options in enumerate(plays):
        sampled = len(plays) <= 200 or i % every == 0
        for kind, script in options.items():
            if kind != "gold" and not sampled:
                continue
            answer = tau.trial(suite.env, suite.split, i, script, digest=True)
            record = passhat_trial(suite, i, script).record
            theirs, mine = answer["reward"] == 1.0, record.outcome == "pass"
            same = answer["digest"] == digest(suite, record)
            row = rows[kind]
            row.update(trials=1, tau=theirs, passhat=mine, agree=theirs == mine, same_data=same)
            if theirs != mine:
                failed = "; ".join(f"{g.name}: {g.reason}" for g in record.grades if not g.passed)[:300]
                disagreements.append(f"task {i} {kind}: τ-bench {answer['reward']:.0f}, passhat {record.outcome}, "
                                     f"final data {'equal' if same else 'DIFFERENT'} | {failed}")
    print(f"\n{suite.env} {suite.split}: {len(plays)} tasks ({time.perf_counter() - t:.0f} s)")
    print(f"  {'perturbation':26} {'trials':>6} {'τ-bench pass':>12} {'passhat pass':>12} {'agree':>6} {'same data':>9}")
    total = Counter[str]()
    for kind, row in rows.items():
        if row["trials"]:
            total.update(row)
            print(f"  {kind:26} {row['trials']:6d} {row['tau']:12d} {row['passhat']:12d} {row['agree']:6d} "
                  f"{row['same_data']:9d}")
    print(f"  {'all':26} {total['trials']:6d} {total['tau']:12d} {total['passhat']:12d} {total['agree']:6d} "
          f"{total['same_data']:9d}")
    for line in disagreements:
        print("  DISAGREE", line)
    return total


def regrade(suite: Suite) -> None:
    """A stored gold run of the suite (redaction on) re-graded with nothing changed: 0 verdicts may change."""
    plays = {c.id: s["gold"] for c, s in zip(suite.cases, scripts(suite.tasks, suite.tools()), strict=True)}

    async def agent(episode: Any) -> str:
        return await replay(plays[episode.case_id])(episode)  # type: ignore[no-any-return]

    folder = Path(tempfile.mkdtemp(prefix="passhat-tau-regrade-"))
    run = evaluate(suite.folder, agent, trials=1, out=folder / "run", sanity=False)
    verdicts = Counter(r.outcome for r in run.records())
    report = regrade_run(folder / "run", folder / "regraded")
    kept = sum(any(g.details.get("kept_because_redacted") for g in r.grades)
               for r in RunStore(folder / "regraded").iter_records())
    print(f"  regrade of a stored gold run: {dict(verdicts)}; verdicts changed {len(report.outcome_changes)} "
          f"of {report.trials} (trials that kept a grade because redacted text decided it: {kept})")


if __name__ == "__main__":
    main()
