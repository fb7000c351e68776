"""τ²-bench's own evaluator on trajectories written by bench_tau2.py (run with τ²'s interpreter, not passhat's).

Reads a JSON list of plans from stdin: ``{"domain", "task", "steps": [{"by", "tool", "args"}], "says": [...]}``.
For each plan it builds τ²'s environment for the task (``set_state`` with its initial state), executes the
steps live through ``Environment.get_response`` (the agent's and the user's tool calls, each followed by
``sync_tools`` as τ²'s orchestrator does), appends the agent's messages, and grades the trajectory with
τ²'s ``EnvironmentEvaluator`` (DB and env assertions), ``ActionEvaluator`` and ``CommunicateEvaluator``:
the code-decidable reward components. Writes a JSON list of results to stdout.

    /path/to/tau2-venv/bin/python bench/tau2_side.py < plans.json > rewards.json
"""

from __future__ import annotations

import json
import sys

from loguru import logger

logger.remove()

from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage  # noqa: E402
from tau2.data_model.tasks import Task  # noqa: E402
from tau2.environment.toolkit import get_tool_types  # noqa: E402
from tau2.evaluator.evaluator_action import ActionEvaluator  # noqa: E402
from tau2.evaluator.evaluator_communicate import CommunicateEvaluator  # noqa: E402
from tau2.evaluator.evaluator_env import EnvironmentEvaluator  # noqa: E402
from tau2.registry import registry  # noqa: E402

CODE_COMPONENTS = ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE")


def _load_tasks(domain: str) -> dict[str, Task]:
    return {t.id: t for t in registry.get_tasks_loader(domain)(None)}


def grade(plan: dict, tasks: dict[str, Task]) -> dict:
    domain = plan["domain"]
    make_env = registry.get_env_constructor(domain)
    task = tasks[plan["task"]]
    env = make_env()
    state = task.initial_state
    env.set_state(initialization_data=state.initialization_data if state else None,
                  initialization_actions=state.initialization_actions if state else None, message_history=[])
    messages = []
    errors = 0
    for i, step in enumerate(plan["steps"]):
        requestor = "user" if step["by"] == "user" else "assistant"
        call = ToolCall(id=f"call_{i}", name=step["tool"], arguments=step["args"], requestor=requestor)
        message_type = UserMessage if requestor == "user" else AssistantMessage
        messages.append(message_type(role=requestor, content=None, tool_calls=[call]))
        answer = env.get_response(call)
        errors += answer.error
        messages.append(answer)
        env.sync_tools()
    for text in plan["says"]:
        messages.append(AssistantMessage(role="assistant", content=text))
    types = get_tool_types(env.tools)
    if env.user_tools is not None:
        types.update(get_tool_types(env.user_tools))
    env_info = EnvironmentEvaluator.calculate_reward(environment_constructor=make_env, task=task,
                                                     full_trajectory=messages)
    action_info = ActionEvaluator.calculate_reward(task=task, full_trajectory=messages, tool_types=types)
    said_info = CommunicateEvaluator.calculate_reward(task=task, full_trajectory=messages)
    criteria = task.evaluation_criteria
    basis = [b.value for b in criteria.reward_basis] if criteria else []
    checks = env_info.env_assertions or []
    components = {
        "DB": env_info.db_check.db_reward if env_info.db_check else 1.0,
        "ENV_ASSERTION": float(all(c.met for c in checks)),
        "ACTION": action_info.reward,
        "COMMUNICATE": said_info.reward,
    }
    reward = 1.0
    for b in basis:
        if b in CODE_COMPONENTS:
            reward *= components[b]
    return {"case": plan["case"], "variant": plan["variant"], "basis": basis, "components": components,
            "code_reward": reward, "tool_errors": errors}


def main() -> None:
    plans = json.load(sys.stdin)
    cache: dict[str, dict[str, Task]] = {}
    out = []
    for plan in plans:
        if plan["domain"] not in cache:
            cache[plan["domain"]] = _load_tasks(plan["domain"])
        out.append(grade(plan, cache[plan["domain"]]))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
