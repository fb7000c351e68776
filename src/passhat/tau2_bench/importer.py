"""``passhat cases import --format tau2-bench PATH``: one suite folder per domain of a τ² checkout.

For each domain (retail, airline, telecom) it writes ``OUT/NAME/domain.py`` — three lines naming the
checkout; the domain (:mod:`.domain`) runs τ²'s environment from there when the suite loads — and one case
per task of ``tasks.json`` in the chosen split (``split_tasks.json``; default ``base``, every task):

- ``user.goal`` is the task's user scenario as τ²'s user simulator gets it (``str(task.user_scenario)``);
  the agent opens with passhat's generic opener, as τ²'s agent does with its own greeting;
- ``fixture``: the task's own fixture when it has an ``initial_state`` (``task:ID``);
- ``reference``: the gold actions, the user's marked ``by: user``, those that fail marked ``fails: true``;
- ``assertions``, one kind per reward component, each ``required`` only when the task's ``reward_basis``
  names its component (the others are graded and recorded, as τ² computes them too):
  ``DB`` → ``expect_state: reference`` (``unchanged_except: {}`` when the gold actions are ``[]``);
  ``ENV_ASSERTION`` → ``tau2_env_assertions``; ``ACTION`` → one ``tau2_action`` per gold action;
  ``COMMUNICATE`` → ``reply_contains`` per ``communicate_info``, numbers by value;
- ``judge``: one criterion per ``nl_assertions`` entry (``NL_ASSERTION``), failing closed without a judge;
- ``limits`` and ``rules``: τ²'s (200 steps, 10 tool errors; loops and unknown tools do not fail a trial).

Everything is checked (τ²'s code imports, every gold action names a tool of its side, every reference
runs as marked) before anything is written.
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passhat.cases.load import parse_case
from passhat.errors import CaseError
from passhat.suites.written import write_new_files
from passhat.tau2_bench.checkout import GoldAction, Task, Tau2Env, find_envs, read_tasks
from passhat.tau2_bench.domain import Tau2Domain, task_fixture, tau2_bench_domain
from passhat.tools import ToolBoundary, ToolContext
from passhat.validation import dump_yaml

DOMAIN_PY = '''"""τ²-bench {env}, imported by `passhat cases import --format tau2-bench` from the checkout below.

τ²'s code, data and policy are read from the checkout when this suite loads, so every tool call runs τ²'s
own environment. If the checkout moves, change the path here.
"""

from passhat.tau2_bench.domain import tau2_bench_domain

domain = tau2_bench_domain({checkout!r}, {env!r})
'''
HEADER = "# Imported from {file} (task {ident!r}) by `passhat cases import --format tau2-bench`.\n"
RULES = {"loops_fail": False, "unknown_tools_fail": False}
"""τ²'s reward does not look at repetition, and answers an unknown tool with an error message."""
LIMITS = {"max_steps": 200, "max_tool_errors": 10, "max_seconds": 600.0}
"""τ²'s orchestrator stops at 200 steps or 10 tool errors (``DEFAULT_MAX_STEPS``, ``DEFAULT_MAX_ERRORS``)."""
MAX_TURNS = 100
"""The user's replies: τ² bounds a conversation by its steps only."""
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
NL_LEVELS = {0: "No: the conversation does not satisfy the statement.", 1: "Yes: the conversation satisfies it."}


@dataclass
class Tau2Import:
    """What an import wrote: the suite folder of each domain, its number of cases, and notes."""

    suites: dict[str, Path] = field(default_factory=dict)
    cases: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def case_id(env: Tau2Env, task: Task) -> str:
    if task.id.isdigit():
        return f"{env.name}-{int(task.id):03d}"
    return f"{env.name}-{task.id}" if SAFE_ID.match(task.id) else f"{env.name}-{task.index:03d}"


def case_of(env: Tau2Env, domain: Tau2Domain, task: Task, split: str, failing: set[int]) -> dict[str, Any]:
    """The case mapping for one τ² task (``failing``: positions of gold actions that fail on its fixture)."""
    basis = set(task.reward_basis)
    scenario = domain.runtime.code.task_model.model_validate(task.raw).user_scenario
    case: dict[str, Any] = {
        "id": case_id(env, task),
        "domain": "../domain.py",
        "description": f"τ²-bench {env.name} task {task.id!r}" + (f": {task.purpose}" if task.purpose else "")
                       + f" (reward basis: {', '.join(task.reward_basis) or 'none'}).",
        "user": {"goal": str(scenario), "max_turns": MAX_TURNS},
    }
    if task.has_initial_state:
        case["fixture"] = task_fixture(task)
    if task.actions:
        case["reference"] = [_reference(a, i in failing) for i, a in enumerate(task.actions)]
    assertions: list[dict[str, Any]] = []
    if task.actions is not None or task.env_assertions:  # τ² checks the database unless the task gives neither
        if task.actions:
            assertions.append({"expect_state": _gated({"reference": True}, "DB" in basis)})
        else:
            assertions.append({"unchanged_except": _gated({"description": "no gold actions: nothing may change"},
                                                          "DB" in basis)})
    if task.env_assertions:
        checks = [{"env_type": c.env_type, "func_name": c.func_name, "arguments": copy.deepcopy(c.arguments),
                   "assert_value": c.assert_value, **({"message": c.message} if c.message else {})}
                  for c in task.env_assertions]
        assertions.append({"tau2_env_assertions": _gated({"checks": checks}, "ENV_ASSERTION" in basis)})
    for a in task.actions or []:
        check: dict[str, Any] = {"name": a.name, "arguments": copy.deepcopy(a.arguments)}
        if a.requestor != "assistant":
            check["requestor"] = a.requestor
        if a.compare_args is not None:
            check["compare_args"] = list(a.compare_args)
        assertions.append({"tau2_action": _gated(check, "ACTION" in basis)})
    for text in task.communicate_info:
        assertions.append({"reply_contains": _gated({"text": text, "normalize": ["numbers"]}, "COMMUNICATE" in basis)})
    case["assertions"] = assertions
    if task.nl_assertions:
        case["judge"] = {"include": ["transcript", "tool_calls"], "criteria": [
            {"name": f"nl_assertion_{i}", "question": f"Does the agent satisfy this expected outcome? {text}",
             "levels": dict(NL_LEVELS), "pass_score": 1, "required": "NL_ASSERTION" in basis}
            for i, text in enumerate(task.nl_assertions)]}
    case["limits"] = dict(LIMITS)
    case["rules"] = dict(RULES)
    case["tags"] = {"source": "tau2-bench", "env": env.name, "tau2_id": task.id, "tasks": split}
    case["split"] = split_of(task, env)
    return case


def _gated(check: dict[str, Any], counts: bool) -> dict[str, Any]:
    """``check``, marked ``required: false`` when the task's reward basis leaves its component out."""
    return check if counts else {**check, "required": False}


def split_of(task: Task, env: Tau2Env) -> str:
    """τ²'s ``test`` tasks are passhat's ``holdout`` (what published results report), the rest ``dev``."""
    return "holdout" if task.id in set(env.splits().get("test", [])) else "dev"


def _reference(action: GoldAction, fails: bool) -> dict[str, Any]:
    call: dict[str, Any] = {"tool": action.name, "args": copy.deepcopy(action.arguments)}
    if action.requestor == "user":
        call["by"] = "user"
    if fails:
        call["fails"] = True
    return call


def _check_actions(file: Path, task: Task, domain: Tau2Domain) -> None:
    for j, a in enumerate(task.actions or []):
        tools = domain.user_tools if a.requestor == "user" else domain.tools
        if a.name not in tools:
            whose = "the user's tools" if a.requestor == "user" else "the agent's tools"
            raise CaseError(str(file), f"tasks[{task.index}] (id {task.id!r}).evaluation_criteria.actions[{j}].name",
                            f"unknown tool {a.name!r}; {whose} are: {', '.join(sorted(tools)) or 'none'}")


def failing_actions(domain: Tau2Domain, task: Task) -> set[int]:
    """Positions of the gold actions that fail when run in order on the task's fixture (τ² logs such a call
    and goes on; a failed call changes nothing here)."""
    if not task.actions:
        return set()
    fixture = task_fixture(task) if task.has_initial_state else "default"

    async def run() -> set[int]:
        world = domain.restore(fixture, 0)
        try:
            boundary = ToolBoundary(domain.tool_list(), ToolContext(world), user_tools=domain.user_tools.values())
            failed = set()
            for i, a in enumerate(task.actions or []):
                record = await boundary.call(a.name, a.arguments, by="user" if a.requestor == "user" else "agent")
                if not record.ok:
                    failed.add(i)
            return failed
        finally:
            world.close()

    return asyncio.run(run())


def import_tau2_bench(checkout: Path, out: Path, *, split: str = "base",
                      domains: Collection[str] | None = None) -> Tau2Import:
    """Write a suite folder per domain of ``checkout`` (or of those of ``domains`` it has) into ``out``.
    Nothing is written on error."""
    pending: list[tuple[Path, str]] = []
    result = Tau2Import()
    for env in find_envs(checkout):
        if domains is not None and env.name not in domains:
            continue
        tasks = read_tasks(env.tasks_file)
        splits = env.splits()
        if split != "base" or "base" in splits:
            if split not in splits:
                result.notes.append(f"{env.name}: skipped, its split_tasks.json has no split {split!r} (its splits: "
                                    f"{', '.join(sorted(splits)) or 'none'})")
                continue
            wanted = set(splits[split])
            tasks = [t for t in tasks if t.id in wanted]
        domain = tau2_bench_domain(env.checkout, env.name)  # fails here, not at the first run, if τ²'s code does
        folder = Path(out) / env.name
        pending.append((folder / "domain.py", DOMAIN_PY.format(env=env.name, checkout=str(env.checkout))))
        where = os.path.relpath(env.tasks_file, env.checkout)
        ids: dict[str, str] = {}
        for task in tasks:
            _check_actions(env.tasks_file, task, domain)
            case = case_of(env, domain, task, split, failing_actions(domain, task))
            if case["id"] in ids:
                raise CaseError(str(env.tasks_file), f"tasks[{task.index}].id",
                                f"{task.id!r} and {ids[case['id']]!r} would both be case {case['id']!r}")
            ids[case["id"]] = task.id
            parse_case(case, f"{env.tasks_file} task {task.id}")
            body = dump_yaml(case, sort_keys=False, allow_unicode=True, width=110)
            pending.append((folder / "cases" / f"{case['id']}.yaml", HEADER.format(file=where, ident=task.id) + body))
        result.suites[env.name], result.cases[env.name] = folder, len(tasks)
    if not result.suites:
        raise CaseError(str(checkout), "", f"no domain has a split {split!r}: " + "; ".join(result.notes))
    write_new_files(pending)
    return result
