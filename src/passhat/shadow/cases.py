"""A production conversation as a shadow case: the candidate gets the same user, identity and failures.

- The first user message is the case's instruction; the later ones are the scripted user's turns, said
  in order whatever the candidate asks, after which the user leaves (``max_turns``): production's user
  said nothing more.
- Reads are served from the recording (``shadow/replay.py``); writes run in the sandbox (the fixture).
- A production *write* that failed for a transient reason is a planned fault on the candidate's call of
  the same tool with the same number: ``lost_response`` → ``drop_response`` (the write runs in the
  sandbox, its answer is lost), ``timeout`` → ``timeout``, ``unavailable`` → ``error`` (it does not run);
  the candidate gets production's error text. A ``refused`` write is not replayed: the sandbox answers.
- The case has no assertions: the shadow verdict is the divergence from production, not a grade.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from passhat.domain import Domain
from passhat.errors import PasshatError
from passhat.shadow.traces import Recorded, ToolTurn
from passhat.tools.declare import Tool

FAULTS = {"lost_response": "drop_response", "timeout": "timeout", "unavailable": "error"}
"""Error types of a production write → the fault that reproduces it on the candidate's call."""
MIN_STEPS = 30


@dataclass(frozen=True)
class Call:
    """A tool call with its arguments as the tool takes them (see :func:`normalized_arguments`)."""

    tool: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None
    turn: int = 0
    """Its index among the conversation's turns (production), or its step (candidate)."""


def normalized_arguments(tool: Tool | None, arguments: Any) -> dict[str, Any]:
    """Arguments as the tool receives them — validated, every parameter present (defaults filled in), as JSON
    data — so a recorded call and the candidate's compare equal whenever the tool sees the same call. Arguments
    the tool would refuse are kept as given."""
    raw = arguments if isinstance(arguments, dict) else {}
    if tool is None:
        return dict(raw)
    try:
        validated = tool.arguments.model_validate(raw)
    except ValidationError:
        return dict(raw)
    return json.loads(json.dumps({name: getattr(validated, name) for name in type(validated).model_fields}, default=str))


def check_conversation(rec: Recorded, domain: Domain) -> None:
    """The conversation fits the domain: its domain (when it says), fixture and every tool it called."""
    c = rec.conversation
    if c.domain is not None and c.domain != domain.name:
        raise PasshatError(f"{rec.where}: domain: the conversation is from domain {c.domain!r}, not {domain.name!r} "
                        "(--domain)")
    if c.fixture is not None and c.fixture not in domain.fixtures:
        raise PasshatError(f"{rec.where}: fixture: unknown fixture {c.fixture!r}; domain {domain.name!r} has: "
                        f"{', '.join(sorted(domain.fixtures))}")
    for i, turn in c.tool_turns():
        if turn.name not in domain.tools:
            raise PasshatError(f"{rec.at(i, 'name')}: unknown tool {turn.name!r}; domain {domain.name!r} has: "
                            f"{', '.join(sorted(domain.tools))} (is the trace from another domain?)")


def case_ids(recorded: list[Recorded]) -> list[str]:
    """A case id for each conversation: its id with what a case id cannot hold replaced, unique — without regard
    to case too, since each names a file (``Conv-1.yaml`` and ``conv-1.yaml`` are one file on macOS and Windows)."""
    out: list[str] = []
    taken: set[str] = set()
    for rec in recorded:
        base = re.sub(r"[^A-Za-z0-9_.\-]+", "-", rec.conversation.id).strip("-._")[:80] or "conversation"
        cid, n = base, 1
        while cid.casefold() in taken:
            n += 1
            cid = f"{base}-{n}"
        out.append(cid)
        taken.add(cid.casefold())
    return out


def _calls(rec: Recorded, domain: Domain, kind: str) -> list[tuple[int, ToolTurn]]:
    return [(i, t) for i, t in rec.conversation.tool_turns() if domain.tools[t.name].kind == kind]


def recorded_reads(rec: Recorded, domain: Domain) -> list[Call]:
    """Production's read calls, in order: what the candidate's matching reads are answered with."""
    return [Call(t.name, normalized_arguments(domain.tools[t.name], t.arguments), t.result, t.error, i)
            for i, t in _calls(rec, domain, "read")]


def production_writes(rec: Recorded, domain: Domain) -> list[Call]:
    """Production's writes that took effect (returned, or ran and lost their answer), in order."""
    return [Call(t.name, normalized_arguments(domain.tools[t.name], t.arguments), t.result, t.error, i)
            for i, t in _calls(rec, domain, "write") if t.took_effect]


def replayed_faults(rec: Recorded, domain: Domain) -> list[dict[str, Any]]:
    """A fault for each production write that failed for a transient reason, on the same call of its tool."""
    faults: list[dict[str, Any]] = []
    count: dict[str, int] = {}
    for _, t in _calls(rec, domain, "write"):
        count[t.name] = count.get(t.name, 0) + 1
        failure = t.failure
        if failure in FAULTS:
            faults.append({"tool": t.name, "kind": FAULTS[failure], "on_call": count[t.name], "message": t.error})
    return faults


def shadow_case(rec: Recorded, case_id: str, domain_ref: str, fixture: str, domain: Domain,
                max_seconds: float | None = None) -> dict[str, Any]:
    """The case mapping (a valid case file) that replays one conversation with the candidate (``max_seconds``:
    its time budget, default the case default)."""
    c = rec.conversation
    said = c.user_texts
    case: dict[str, Any] = {
        "id": case_id,
        "domain": domain_ref,
        "fixture": c.fixture or fixture,
        "description": f"Shadow of production conversation {c.id} ({rec.where}), written by `passhat shadow`.",
        "instruction": said[0],
        "user": {"identity": c.identity, "turns": [{"say": text} for text in said[1:]], "max_turns": len(said) - 1},
        "faults": replayed_faults(rec, domain),
        "limits": {"max_steps": max(MIN_STEPS, 3 * len(c.tool_turns())),
                   **({"max_seconds": max_seconds} if max_seconds is not None else {})},
        "tags": {**c.tags, "source": "shadow"},
    }
    if c.identity is None:
        del case["user"]["identity"]
    return case
