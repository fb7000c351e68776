"""``passhat cases import --format tau-bench PATH``: one suite folder per environment of a checkout.

For each environment (retail, airline) it writes ``OUT/ENV/domain.py`` — three lines naming the
checkout; the domain (:mod:`.domain`) reads τ-bench's tools, data and policy from there when the suite
loads — and ``OUT/ENV/cases/ENV-SPLIT-NNN.yaml``, one case per task of ``tasks_SPLIT.py``:

- ``user``: ``identity`` is the task's ``user_id``; ``goal`` (the user's hidden brief) is τ-bench's
  instruction to its user simulator, which the simulated user plays and the agent never sees (as in
  τ-bench); the agent's opening message is passhat's generic opener;
- ``reference``: the gold actions, ``[{tool, args}]``;
- ``assertions``: ``expect_state: reference`` (the final state equals what the gold actions produce on
  the fixture: τ-bench's database-hash reward) — for a task without gold actions ``unchanged_except: {}``
  (nothing may change: the same reward, said directly) — and ``reply_contains`` for each of the task's
  outputs, numbers by value (τ-bench drops commas before looking: ``1,093.34`` counts for ``1093.34``);
- ``rules``: the loop and unknown-tool vetoes switched off (``loops_fail: false``,
  ``unknown_tools_fail: false``): τ-bench's reward looks only at the final state and the outputs.

A split an environment does not have (airline has only ``tasks_test.py``) is skipped with a note; the
import fails only when no environment has it.

Everything is checked (the tools import, every action names one of them) before anything is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passhat.cases.load import parse_case
from passhat.cases.model import DEFAULT_OPENER
from passhat.errors import CaseError
from passhat.suites.written import write_new_files
from passhat.tau_bench.checkout import Env, Task, find_envs, read_tasks
from passhat.tau_bench.domain import tau_bench_domain
from passhat.validation import dump_yaml

SPLITS = {"test": "holdout", "dev": "dev", "train": "dev"}
"""τ-bench task file → passhat split (the test tasks are what published results report)."""
DOMAIN_PY = '''"""τ-bench {env}, imported by `passhat cases import --format tau-bench` from the checkout below.

The tools, data and policy are read from the checkout when this suite loads, so every tool call runs
τ-bench's own code. If the checkout moves, change the path here.
"""

from passhat.tau_bench.domain import tau_bench_domain

domain = tau_bench_domain({checkout!r}, {env!r})
'''
RULES = {"loops_fail": False, "unknown_tools_fail": False}
"""τ-bench rewards the final state and the outputs only: repeating a read or naming a tool that does not
exist costs nothing there, so neither fails an imported trial (both are still recorded as grades)."""
HEADER = "# Imported from {file} (task {index}) by `passhat cases import --format tau-bench`.\n"


@dataclass
class TauBenchImport:
    """What an import wrote: the suite folder of each environment and its number of cases."""

    suites: dict[str, Path] = field(default_factory=dict)
    cases: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What was left out and why (an environment without the split), for the user to read."""


def gold_calls(task: Task, ending: set[str]) -> list[dict[str, Any]]:
    """The task's actions as ``reference:`` calls. τ-bench leaves its ending tools out when it replays the
    gold actions; here one may stay as the last call (it changes nothing), since a call after it would be
    refused once the episode has ended."""
    calls = [{"tool": a.name, "args": a.kwargs} for a in task.actions]
    return [c for i, c in enumerate(calls) if c["tool"] not in ending or i == len(calls) - 1]


def case_of(env: Env, split: str, task: Task, ending: set[str]) -> dict[str, Any]:
    """The case mapping for one τ-bench task."""
    case: dict[str, Any] = {
        "id": f"{env.name}-{split}-{task.index:03d}",
        "domain": "../domain.py",
        "description": f"τ-bench {env.name} {split} task {task.index}: the final state must be the one the gold actions "
                       "produce" + (", and the replies must give the expected outputs" if task.outputs else "") + ".",
        "instruction": DEFAULT_OPENER,  # τ-bench's instruction is for the user simulator, not the agent
        "user": {"identity": task.user_id, "goal": task.instruction},
        "reference": gold_calls(task, ending),
        # without gold actions τ-bench's expected database is the initial one: nothing may change
        "assertions": [{"expect_state": "reference"} if task.actions else {"unchanged_except": {}},
                       *({"reply_contains": {"text": o, "normalize": ["numbers"]}} for o in task.outputs)],
        "rules": dict(RULES),
        "tags": {"source": "tau-bench", "env": env.name, "tasks": split},
        "split": SPLITS.get(split, "dev"),
    }
    return case


def _check_actions(file: Path, tasks: list[Task], tools: set[str]) -> None:
    for task in tasks:
        for j, action in enumerate(task.actions):
            if action.name not in tools:
                raise CaseError(str(file), f"task {task.index} (line {task.line}): actions[{j}]",
                                f"unknown tool {action.name!r}; the environment's tools are: {', '.join(sorted(tools))}")


def _task_files(env: Env) -> list[str]:
    return [p.name for p in sorted(env.folder.glob("tasks_*.py"))]


def import_tau_bench(checkout: Path, out: Path, *, split: str = "test") -> TauBenchImport:
    """Write a suite folder per environment of ``checkout`` into ``out``. Nothing is written on error."""
    pending: list[tuple[Path, str]] = []
    result = TauBenchImport()
    envs = find_envs(checkout)
    missing = [env for env in envs if not env.tasks_file(split).is_file()]
    if len(missing) == len(envs):
        file = envs[0].tasks_file(split)
        raise CaseError(str(file), "", f"no environment has tasks_{split}.py; the task files here are: "
                        + "; ".join(f"{e.name}: {', '.join(_task_files(e)) or 'none'}" for e in envs))
    for env in missing:
        result.notes.append(f"{env.name}: skipped, it has no tasks_{split}.py (its task files: "
                            f"{', '.join(_task_files(env)) or 'none'})")
    for env in envs:
        if env in missing:
            continue
        file = env.tasks_file(split)
        tasks = read_tasks(file)
        domain = tau_bench_domain(env.checkout, env.name)  # fails here, not at the first run, if the tools do
        _check_actions(file, tasks, set(domain.tools))
        folder = Path(out) / env.name
        pending.append((folder / "domain.py", DOMAIN_PY.format(env=env.name, checkout=str(env.checkout))))
        where = os.path.relpath(file, env.checkout)
        ending = {name for name, tool in domain.tools.items() if tool.ends_episode}
        for task in tasks:
            case = case_of(env, split, task, ending)
            parse_case(case, f"{file} task {task.index}")  # a valid case file; its reference runs when it loads
            body = dump_yaml(case, sort_keys=False, allow_unicode=True, width=110)
            pending.append((folder / "cases" / f"{case['id']}.yaml", HEADER.format(file=where, index=task.index) + body))
        result.suites[env.name], result.cases[env.name] = folder, len(tasks)
    write_new_files(pending)
    return result
