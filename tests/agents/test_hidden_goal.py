"""``user.goal`` is the user's private brief: no agent sees it, in process or elsewhere, except through
what the user says."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from passhat.cases import load_suite
from passhat.episode import Episode
from passhat.runner import run_trial
from passhat.seeding import trial_seed
from tests.agents.conftest import NOTES

GOAL = "Put 'call mom' on my list as a note, priority 2 (secret brief 7f3a)."
OPENER = "Hello, could you help me with my notes?"

DUMPER = '''
import json, os, sys, urllib.request

def get(url):
    request = urllib.request.Request(url, headers={"authorization": f"Bearer {os.environ['PASSHAT_TOKEN']}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.read().decode()

seen = {"env": dict(os.environ), "start": get(os.environ["PASSHAT_TRIAL_URL"]),
        "tools": get(os.environ["PASSHAT_TOOLS_URL"])}
print(json.dumps({"reply": "I had a look around. " + json.dumps(seen)}))  # its sandbox has nowhere else to put it
'''


def goal_suite(tmp_path: Path, **user: Any) -> Path:
    data = yaml.safe_load((NOTES / "cases" / "add-note.yaml").read_text())
    data["domain"] = str(NOTES / "domain.py")
    data["instruction"] = OPENER
    data["user"] = {**data["user"], "goal": GOAL, **user}
    folder = tmp_path / "suite"
    folder.mkdir(exist_ok=True)
    (folder / "add-note.yaml").write_text(yaml.safe_dump(data))
    return folder


def run_one(folder: Path, agent: Any) -> Any:
    suite = load_suite(str(folder))
    case = suite.cases[0]
    return asyncio.run(run_trial(case, suite.domain_of(case), agent, 0, trial_seed(0, case.id, 0)))


def everything(obj: Any, depth: int = 0, seen: set[int] | None = None) -> Any:
    """Every public attribute reachable from ``obj`` (what an agent can see without reaching into privates)."""
    seen = set() if seen is None else seen
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    if id(obj) in seen or depth > 6:
        return "…"
    seen.add(id(obj))
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {str(k): everything(v, depth + 1, seen) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set):
        return [everything(v, depth + 1, seen) for v in obj]
    out: dict[str, Any] = {}
    for name in dir(obj):
        if name.startswith("_"):
            continue
        value = getattr(obj, name)
        if callable(value) or isinstance(value, type):
            continue
        out[name] = everything(value, depth + 1, seen)
    return out


def test_an_agent_in_process_sees_the_opener_but_never_the_goal(tmp_path: Path) -> None:
    seen: list[str] = []

    async def nosy(episode: Episode) -> str:
        seen.append(json.dumps({"episode": everything(episode), "tool_specs": episode.tool_specs()}, default=str))
        return "I had a look around."

    rec = run_one(goal_suite(tmp_path), nosy)
    assert rec.end_reason == "completed"
    assert OPENER in seen[0] and "call mom" not in seen[0] and "7f3a" not in seen[0]


def test_an_agent_elsewhere_sees_the_opener_but_never_the_goal(tmp_path: Path, run_suite: Any) -> None:
    script = tmp_path / "dumper.py"
    script.write_text(DUMPER)
    rec = run_suite(goal_suite(tmp_path), f"cmd:{sys.executable} {script}")[0]
    assert rec.reply.startswith("I had a look around. ")
    seen = json.loads(rec.reply.removeprefix("I had a look around. "))
    assert json.loads(seen["start"])["instruction"] == OPENER and seen["env"]["PASSHAT_INSTRUCTION"] == OPENER
    everything_seen = json.dumps(seen)
    assert "call mom" not in everything_seen and "7f3a" not in everything_seen


def test_an_agent_that_asks_hears_the_goal_from_the_user_and_can_pass(tmp_path: Path) -> None:
    async def asking(episode: Episode) -> str:
        want = await episode.say("Sure — how can I help you today?")
        assert want is not None
        title = re.search(r"'([^']*)'", want)
        priority = re.search(r"priority ([0-9])", want)
        assert title and priority
        result = await episode.call("add_note", {"title": title.group(1), "priority": int(priority.group(1))})
        return f"I added note {result.content['id']}."

    rec = run_one(goal_suite(tmp_path), asking)
    assert rec.outcome == "pass", rec.failed_grades()
    assert [m.text for m in rec.messages if m.role == "user"] == [OPENER, GOAL]
