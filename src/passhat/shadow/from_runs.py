"""passhat's own trials as production-like conversations (the JSONL trace format).

A run of a suite with one agent is the nearest thing to production traffic a test can make: each trial
becomes one conversation — what the user said, every tool call with what came back, the final reply —
with the case's identity and fixture from the manifest. A call a planned fault answered becomes a failed
call of the matching error type (``drop_response`` → ``lost_response``, ``timeout`` → ``timeout``,
``error`` → ``unavailable``), which is how ``passhat shadow`` replays the failure for a candidate. Calls of
tools the domain does not have are left out (they never reached a tool), and so are trials that ended in
infrastructure errors. ``passhat export-otlp --file`` gives the same conversations as OTLP/JSON.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from passhat.models import CaseMeta
from passhat.models.files import write_text_atomic
from passhat.models.finite import dumps_strict
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore
from passhat.tools import ToolCall

FAULT_ERRORS = {"drop_response": "lost_response", "timeout": "timeout", "error": "unavailable"}


def _tool_turn(call: ToolCall) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "tool", "name": call.tool, "arguments": call.arguments}
    if call.ok:
        turn["result"] = call.result
    else:
        turn["error"] = call.error or call.status
        turn["error_type"] = FAULT_ERRORS.get(call.fault_kind or "", "refused") if call.status == "fault" else "refused"
    return turn


def conversation_from_record(record: TrialRecord, meta: CaseMeta | None = None) -> dict[str, Any]:
    """One trial as a conversation line; ``meta`` is the case's ``suite.case_meta`` entry of the manifest."""
    meta = meta or CaseMeta()
    messages = [(m.at, 0, i, {"role": "user" if m.role == "user" else "assistant", "text": m.text})
                for i, m in enumerate(record.messages)]
    calls = [(c.started_at, 1, c.step, _tool_turn(c)) for c in record.calls if c.status != "unknown_tool"]
    turns = [turn for *_, turn in heapq.merge(messages, calls, key=lambda e: (e[0], e[1], e[2]))]
    line: dict[str, Any] = {"id": f"{record.case_id}-t{record.trial}", "turns": turns}
    domain = next((s.attributes.get("passhat.domain") for s in record.spans if s.kind == "trial"), None)
    for field, value in (("identity", meta.identity), ("fixture", meta.fixture), ("domain", domain)):
        if value is not None:
            line[field] = value
    if meta.tags:
        line["tags"] = dict(meta.tags)
    return line


def conversations_from_run(folder: Path) -> Iterator[dict[str, Any]]:
    """Every trial of the run folder that was not an infrastructure error, as a conversation line."""
    store = RunStore(Path(folder))
    meta = store.manifest().suite.case_meta
    for record in store.iter_records():
        if record.outcome != "error":
            yield conversation_from_record(record, meta.get(record.case_id))


def write_conversations(folder: Path, file: Path) -> int:
    """Write the run's conversations to ``file`` as JSONL (whole or not at all); returns how many."""
    lines = [dumps_strict(line, str(file), ensure_ascii=False) + "\n" for line in conversations_from_run(folder)]
    write_text_atomic(Path(file), "".join(lines))
    return len(lines)
