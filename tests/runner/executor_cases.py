"""What the tests of the executors that run trials in other processes (Ray, forked workers) share: how two runs'
records are compared, and agents that kill or block the process they run in."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import passhat
from passhat.runner import RunStore

VOLATILE = ("latency_s", "trials_bytes")
"""The only summary figures that may differ between executors: wall-clock latency of the agent, measured, and
the size of trials.jsonl, whose records carry those timings and timestamps as text of varying length."""


def without(value: Any, keys: tuple[str, ...]) -> Any:
    """``value`` with every mapping entry named in ``keys`` removed, at any depth."""
    if isinstance(value, dict):
        return {k: without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without(v, keys) for v in value]
    return value


def deterministic(record: Any) -> dict[str, Any]:
    """What a trial did, without when and how fast: the fields both executors must agree on."""
    return {"seed": record.seed, "outcome": record.outcome, "end_reason": record.end_reason,
            "attempt": record.attempt, "reply": record.reply, "diff": record.diff,
            "calls": [c.model_dump(exclude={"started_at", "duration_ms"}) for c in record.calls],
            "grades": [(g.name, g.passed, g.required) for g in record.grades],
            "failure": record.failure.model_dump() if record.failure else None}


def by_key(folder: Path) -> dict[tuple[str, int], Any]:
    recs = RunStore(folder).load()
    assert len(recs) == len({r.key for r in recs}), "a (case, trial) was recorded twice"
    return {r.key: r for r in recs}


KILLER = '''
import os, signal
from pathlib import Path
from passhat.agents import reference_agent

careful = reference_agent("careful")
MARKER, PIDS = Path({marker!r}), Path({pids!r})


async def agent(episode):
    with PIDS.open("a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
    if (episode.case_id, episode.trial) == ({case!r}, 1) and not MARKER.exists():
        MARKER.write_text("killed once")
        os.kill(os.getpid(), signal.SIGKILL)  # the worker process, with the other trials it runs
    return await careful(episode)
'''


def limited(tmp_path: Path, seconds: float) -> Path:
    from tests.runner.test_bounded_agents import limited_cases

    return limited_cases(tmp_path, f"limits: {{max_seconds: {seconds}}}\n")


def bounded(**kw: Any) -> Any:
    """``passhat.evaluate`` that fails the test after 120 s instead of hanging the session (a blocked worker
    used to hang the run for good)."""
    async def go() -> Any:
        return await asyncio.wait_for(passhat.evaluate_async(**kw), timeout=120)

    return asyncio.run(go())


GIL_HOLDER = '''
import asyncio, re
from pathlib import Path

MARKER = Path({marker!r})


async def agent(ep):
    """Trial 0's first attempt blocks in C code that keeps the GIL (a regular expression that backtracks for
    ages): not even a watchdog thread of its process runs. Its retry and the other trials pass."""
    await asyncio.sleep(0.1)
    if ep.trial == 0 and not MARKER.exists():
        MARKER.write_text("blocked once")
        re.match(r"(a+)+$", "a" * 64 + "b")
    await asyncio.sleep(0.2)
    await ep.call("add_note", {{"title": "call mom", "priority": 2}})
    return "added the note"
'''
