"""The built-in refunds cases on the built-in domain and on this one (our MCP server over PostgreSQL),
side by side: each case's passes out of k per reference agent, and whether every trial agrees.

    python examples/upstream/refunds_pg/parity.py [--trials 4] [--agents careful,hasty,flaky] [--stdio]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import passhat
from passhat.cases import load_suite

sys.path.insert(0, str(Path(__file__).resolve().parent))
from domain import STDIO, domain, refunds  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--agents", default="careful,hasty,flaky")
    parser.add_argument("--stdio", action="store_true", help="start the server per trial over stdio (slower)")
    args = parser.parse_args()
    builtin = load_suite("refunds")
    upstream = dataclasses.replace(builtin, domains={"refunds": refunds(STDIO) if args.stdio else domain})
    agree = True
    with tempfile.TemporaryDirectory() as out:
        for agent in args.agents.split(","):
            t0 = time.perf_counter()
            runs = {name: passhat.evaluate(suite, agent, trials=args.trials, seed=0, concurrency=8, sanity=False,
                                           out=Path(out) / f"{agent}-{name}")
                    for name, suite in (("builtin", builtin), ("mcp+pg", upstream))}
            seen = {name: {(r.case_id, r.trial): r.outcome for r in run.records()} for name, run in runs.items()}
            print(f"\n{agent} (k={args.trials}, seed 0, {time.perf_counter() - t0:.1f}s)")
            for case in builtin.cases:
                row = [sum(seen[n][(case.id, t)] == "pass" for t in range(args.trials)) for n in seen]
                same = all(seen["builtin"][(case.id, t)] == seen["mcp+pg"][(case.id, t)] for t in range(args.trials))
                agree &= same
                print(f"  {case.id:32s} built-in {row[0]}/{args.trials}  mcp+pg {row[1]}/{args.trials}  "
                      f"{'same' if same else 'DIFFERENT'}")
    print("\nevery trial agrees" if agree else "\nsome trials differ")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
