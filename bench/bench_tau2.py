"""τ²-bench import: gold replay and perturbations, passhat's verdicts against τ²'s own evaluator.

    python bench/bench_tau2.py --checkout ~/src/tau2-bench --tau2-python ~/tau2-venv/bin/python \
        [--domains retail,telecom,airline] [--limit N]

Imports the checkout (``passhat cases import --format tau2-bench``) into a temporary folder, then for
every case plays trajectories through passhat's runner (a scripted agent makes the agent's calls; a
scripted user makes the user's own calls through the same boundary, when the agent asks for them) and,
in τ²'s own interpreter (``bench/tau2_side.py``: τ² installed there, never in passhat's environment),
through τ²'s ``Environment`` and its evaluators:

- ``gold``: the task's gold actions, the agent saying every ``communicate_info``;
- ``skip_write``: the first of the agent's gold calls that mutates left out;
- ``change_arg``: that call with one argument changed (a list loses its last element, a string gets "0"
  appended, a number 1 added);
- ``extra_write``: another task's first mutating call added at the end;
- ``skip_user``: the first of the user's gold calls that mutates left out (telecom's dual control).

Compared per reward component (DB, ENV_ASSERTION, ACTION, COMMUNICATE: the code-decidable ones; NL
assertions need a judge model) and for the task's code-decidable reward (the product over the components
its ``reward_basis`` names). passhat's verdict for a component is its grades' (required or not); its
overall verdict is every required grade except the judge's. Prints an agreement table and every
disagreement.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from passhat.cases.suite import load_suite
from passhat.tau2_bench.checkout import Task, find_envs, read_tasks
from passhat.tau2_bench.importer import case_id, import_tau2_bench
from passhat.tau2_bench.replay import Step, replay

HERE = Path(__file__).resolve().parent
COMPONENTS = ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE")


def _mutating(domain: Any, by: str, tool: str) -> bool:
    tools = domain.user_tools if by == "user" else domain.tools
    return tool in tools and tools[tool].kind == "write"


def _changed(args: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    out = copy.deepcopy(args)
    for k, v in out.items():
        if isinstance(v, list) and len(v) >= 2:
            out[k] = v[:-1]
            return out, f"{k}: dropped {v[-1]!r}"
    for k, v in out.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int | float):
            out[k] = v + 1
            return out, f"{k}: {v} → {v + 1}"
        if isinstance(v, str):
            out[k] = v + "0"
            return out, f"{k}: {v!r} → {v + '0'!r}"
    return None


def plans_for(domain: Any, env_name: str, task: Task, other: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The gold trajectory of ``task`` and its perturbations (``other``: another task's first mutating call)."""
    steps = [{"by": "user" if a.requestor == "user" else "agent", "tool": a.name, "args": a.arguments}
             for a in task.actions or []]
    base = {"domain": env_name, "task": task.id, "case": case_id(find_env(env_name), task), "says": list(task.communicate_info)}
    plans = [{**base, "variant": "gold", "steps": steps, "note": ""}]
    writes = [i for i, s in enumerate(steps) if s["by"] == "agent" and _mutating(domain, "agent", s["tool"])]
    if writes:
        i = writes[0]
        plans.append({**base, "variant": "skip_write", "steps": steps[:i] + steps[i + 1:], "note": steps[i]["tool"]})
        change = _changed(steps[i]["args"])
        if change is not None:
            changed = [*steps[:i], {**steps[i], "args": change[0]}, *steps[i + 1:]]
            plans.append({**base, "variant": "change_arg", "steps": changed, "note": f"{steps[i]['tool']} {change[1]}"})
    if other is not None:
        plans.append({**base, "variant": "extra_write", "steps": [*steps, other], "note": other["tool"]})
    users = [i for i, s in enumerate(steps) if s["by"] == "user" and _mutating(domain, "user", s["tool"])]
    if users:
        i = users[0]
        plans.append({**base, "variant": "skip_user", "steps": steps[:i] + steps[i + 1:], "note": steps[i]["tool"]})
    return plans


_ENVS: dict[str, Any] = {}


def find_env(name: str) -> Any:
    return _ENVS[name]


def passhat_verdicts(suite: Any, plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []

    async def run_all() -> None:
        for plan in plans:
            case = suite.case(plan["case"])
            steps = [Step(s["tool"], s["args"], s["by"]) for s in plan["steps"]]
            out.append(_components(await replay(case, suite.domain_of(case), steps, plan["says"])))

    asyncio.run(run_all())
    return out


def _components(record: Any) -> dict[str, Any]:
    comps: dict[str, list[bool]] = defaultdict(list)
    for g in record.grades:
        custom = g.details.get("custom_grader")
        if g.name.startswith(("expect_state", "unchanged_except")):
            comps["DB"].append(g.passed)
        elif custom == "tau2_env_assertions":
            comps["ENV_ASSERTION"].append(g.passed)
        elif custom == "tau2_action":
            comps["ACTION"].append(g.passed)
        elif g.name.startswith("reply_contains"):
            comps["COMMUNICATE"].append(g.passed)
    code = all(g.passed for g in record.grades if g.required and g.grader != "judge")
    failed = [f"{g.name}: {g.reason}"[:160] for g in record.grades if g.required and g.grader != "judge" and not g.passed]
    return {"components": {k: float(all(v)) for k, v in comps.items()}, "verdict": code, "failed": failed,
            "end_reason": record.end_reason}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkout", type=Path, required=True)
    ap.add_argument("--tau2-python", required=True, help="an interpreter with τ² installed (its own venv)")
    ap.add_argument("--domains", default="retail,telecom,airline")
    ap.add_argument("--limit", type=int, default=0, help="at most this many tasks per domain (0: all)")
    ap.add_argument("--show", type=int, default=30, help="disagreements to print")
    ap.add_argument("--save", type=Path, help="write plans and both sides' results here (JSON)")
    args = ap.parse_args()
    wanted = args.domains.split(",")
    out = Path(tempfile.mkdtemp(prefix="tau2-bench-"))
    t0 = time.perf_counter()
    import_tau2_bench(args.checkout, out, domains=wanted)
    print(f"imported into {out} in {time.perf_counter() - t0:.1f}s")
    plans: list[dict[str, Any]] = []
    ours: list[dict[str, Any]] = []
    for env in find_envs(args.checkout):
        if env.name not in wanted:
            continue
        _ENVS[env.name] = env
        suite = load_suite(str(out / env.name / "cases"))
        domain = next(iter(suite.domains.values()))
        tasks = read_tasks(env.tasks_file)
        tasks = tasks[: args.limit] if args.limit else tasks
        env_plans: list[dict[str, Any]] = []
        for i, task in enumerate(tasks):
            other = None
            for t in tasks[i + 1:] + tasks[:i]:
                first = next((a for a in t.actions or [] if a.requestor == "assistant"
                              and _mutating(domain, "agent", a.name)), None)
                if first is not None:
                    other = {"by": "agent", "tool": first.name, "args": first.arguments}
                    break
            env_plans += plans_for(domain, env.name, task, other)
        t1 = time.perf_counter()
        ours += passhat_verdicts(suite, env_plans)
        print(f"{env.name}: {len(env_plans)} trajectories in passhat: {time.perf_counter() - t1:.1f}s")
        plans += env_plans
    t2 = time.perf_counter()
    done = subprocess.run([args.tau2_python, str(HERE / "tau2_side.py")], input=json.dumps(plans), text=True,
                          capture_output=True, cwd=args.checkout, check=False)
    if done.returncode != 0:
        sys.exit(f"τ²'s side failed:\n{done.stderr[-3000:]}")
    theirs = json.loads(done.stdout)
    print(f"τ²'s evaluator on the same trajectories: {time.perf_counter() - t2:.1f}s")
    if args.save:
        args.save.write_text(json.dumps({"plans": plans, "passhat": ours, "tau2": theirs}))
    report(plans, ours, theirs, args.show)


def report(plans: list[dict[str, Any]], ours: list[dict[str, Any]], theirs: list[dict[str, Any]], show: int) -> None:
    table: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    disagreements = []
    for plan, a, b in zip(plans, ours, theirs, strict=True):
        key = (plan["domain"], plan["variant"])
        table[key]["n"] += 1
        theirs_pass = b["code_reward"] == 1.0
        table[key]["tau2 pass"] += theirs_pass
        table[key]["passhat pass"] += a["verdict"]
        table[key]["agree"] += a["verdict"] == theirs_pass
        for comp in COMPONENTS:
            if comp in a["components"]:
                table[key][f"{comp} agree"] += a["components"][comp] == b["components"][comp]
                table[key][f"{comp} n"] += 1
        if a["verdict"] != theirs_pass:
            disagreements.append((plan, a, b))
    print()
    head = (f"{'domain':8} {'variant':12} {'n':>4} {'τ² pass':>8} {'passhat':>8} {'agree':>6}  "
            "components agreeing (DB / ENV / ACTION / COMM)")
    print(head)
    print("-" * len(head))
    for (dom, var), c in sorted(table.items()):
        comps = " / ".join(f"{c[f'{k} agree']}/{c[f'{k} n']}" if c[f"{k} n"] else "-" for k in COMPONENTS)
        print(f"{dom:8} {var:12} {c['n']:4} {c['tau2 pass']:8} {c['passhat pass']:8} {c['agree']:6}  {comps}")
    total = sum(c["n"] for c in table.values())
    agree = sum(c["agree"] for c in table.values())
    print(f"\noverall: {agree}/{total} code-decidable verdicts agree; {len(disagreements)} disagreement(s)")
    split: Counter[tuple[str, str, str, float, float]] = Counter()
    for plan, a, b in zip(plans, ours, theirs, strict=True):
        for comp in COMPONENTS:
            if comp in a["components"] and a["components"][comp] != b["components"][comp]:
                gates = "gating" if comp in b["basis"] else "not in basis"
                split[(plan["domain"], comp, gates, a["components"][comp], b["components"][comp])] += 1
    for (dom, comp, gates, mine, theirs_), n in sorted(split.items()):
        print(f"component differs: {dom} {comp} ({gates}): passhat {mine:g}, τ² {theirs_:g} on {n} trajectories")
    for plan, a, b in disagreements[:show]:
        print(f"- {plan['case']} {plan['variant']} ({plan['note']}): τ² {b['code_reward']} {b['components']} "
              f"basis {b['basis']}; passhat {'pass' if a['verdict'] else 'fail'} {a['components']} "
              f"end {a['end_reason']}; failed: {a['failed'][:3]}")


if __name__ == "__main__":
    main()
