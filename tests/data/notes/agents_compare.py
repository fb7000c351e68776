"""Agents and a suite writer for comparison and gate tests on the notes domain.

Each case written by :func:`write_suite` carries a plan in its instruction, e.g. ``plan: base=pp cand=pf``.
The agent named ``base`` (or ``cand``) follows its own plan: ``p`` does the task, ``f`` skips the write
(so the row_count check fails), one letter per trial, cycling. Without a plan the agent passes.
"""

import json
import os
import re
from pathlib import Path

NOTES = Path(__file__).parent
CASE = """id: {id}
domain: {domain}
instruction: "Add a note titled 'call mom' with priority 2. plan: {plan}"
required_tools: [add_note]
user: {{identity: alice}}
assertions:
  - row_count: {{table: notes, where: {{owner: alice, title: call mom}}, equals: 1}}
  - reply_contains: "added"
tags: {tags}
"""


def write_suite(folder, plans, tags=None, groups=None):
    """Write one case per entry of ``plans`` ({case id: "base=pp cand=pf"}) into ``folder``; returns it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for cid, plan in plans.items():
        tag = json.dumps((tags or {}).get(cid, {"scenario": "normal"}))
        text = CASE.format(id=cid, domain=NOTES / "domain.py", plan=plan, tags=tag)
        if groups and cid in groups:
            text += f"group: {groups[cid]}\n"
        (folder / f"{cid}.yaml").write_text(text)
    return folder


async def _follow(ep, who):
    found = re.search(rf"\b{who}=(\w+)", ep.instruction)
    plan = found.group(1) if found else "p"
    if plan[ep.trial % len(plan)] == "p":
        await ep.call("add_note", {"title": "call mom", "priority": 2})
    return "added"


async def base(ep):
    return await _follow(ep, "base")


async def cand(ep):
    return await _follow(ep, "cand")


async def peek(ep):
    """Passes, and reports the gate hash found in the run's manifest on disk while the trial runs."""
    manifest = json.loads(Path(os.environ["PEEK_MANIFEST"]).read_text())
    gate = manifest.get("gate") or {}
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    return f"added; status={manifest['status']} gate={gate.get('sha256')}"
