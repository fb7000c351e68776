"""What the tests of the executors that run trials in other processes (Ray, forked workers) share: how two runs'
records are compared, and agents that kill or block the process they run in."""

from __future__ import annotations

import asyncio
from collections import Counter
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


# -- what every executor whose workers are other processes must do (each test file runs these on its own) ----

def check_a_killed_worker_loses_and_duplicates_nothing(tmp_path: Path, **executor: Any) -> None:
    """A worker is SIGKILLed under trial refund-4812#1 and the attempts beside it: each is retried once, none is
    lost or recorded twice, and the record of the retry says it was the second attempt."""
    victim = "refund-4812"
    agent = tmp_path / "killer.py"
    agent.write_text(KILLER.format(marker=str(tmp_path / "killed"), pids=str(tmp_path / "pids"), case=victim))
    run = passhat.evaluate("refunds", f"{agent}:agent", trials=3, concurrency=6, out=tmp_path / "run", sanity=False,
                           **executor)
    assert (tmp_path / "killed").exists()
    records = by_key(run.folder)  # fails on a duplicate
    assert len(records) == 16 * 3 and run.summary.suite.errors == 0
    assert all(r.outcome == "pass" for r in records.values())  # careful passes every case, retried or not
    assert records[(victim, 1)].attempt == 2  # the retry is recorded as what it was
    attempts = Counter(r.attempt for r in records.values())
    # retried: what was in flight on the dead worker (its lanes, and attempts it held ahead), no more
    assert set(attempts) == {1, 2} and attempts[2] <= 6
    assert len(set((tmp_path / "pids").read_text().split())) >= 2  # the trials ran in more than one worker process


def check_a_run_killed_locally_resumes(tmp_path: Path, **executor: Any) -> None:
    """A local run killed mid-write goes on under ``executor`` without repeating or losing a trial, and its
    records are a fresh local run's."""
    out = tmp_path / "run"
    passhat.evaluate("refunds", "flaky", trials=2, seed=3, out=out, sanity=False)
    lines = (out / "trials.jsonl").read_bytes().splitlines(keepends=True)
    (out / "trials.jsonl").write_bytes(b"".join(lines[:13]) + lines[13][:40])  # killed mid-write
    resumed = passhat.evaluate("refunds", "flaky", trials=2, seed=3, out=out, sanity=False, resume=True, **executor)
    records = by_key(resumed.folder)
    assert len(records) == 32 and len(resumed.manifest.resumed_at) == 1
    fresh = passhat.evaluate("refunds", "flaky", trials=2, seed=3, out=tmp_path / "fresh", sanity=False)
    assert {k: deterministic(r) for k, r in records.items()} == \
        {k: deterministic(r) for k, r in by_key(fresh.folder).items()}


def check_a_trial_whose_time_another_took_is_retried(tmp_path: Path, **executor: Any) -> None:
    """Trial 0 holds its worker's loop for 1 s against a 0.6 s limit and gives it back: it is `time_limit`,
    and the trial that shared its worker (4 in flight on 2 workers) is an infrastructure error, retried."""
    from tests.runner.test_bounded_agents import AGENTS

    run = bounded(suite=limited(tmp_path, 0.6), agent=f"{AGENTS}:blocks_trial_zero", trials=4, concurrency=4,
                  out=tmp_path / "run", sanity=False, **executor)
    records = by_key(run.folder)
    blocker = records[("add-note", 0)]
    assert (blocker.outcome, blocker.end_reason) == ("fail", "time_limit")
    assert "held the event loop" in blocker.error and "--isolate process" in blocker.error
    others = [records[("add-note", t)] for t in (1, 2, 3)]
    assert [r.outcome for r in others] == ["pass"] * 3
    assert sorted(r.attempt for r in others) == [1, 1, 2]  # the one on trial 0's worker lost its first attempt
    assert run.incomplete() is None  # the loop came back within the grace: the local executor goes on too


def check_loops_held_for_good_are_time_limit(tmp_path: Path, monkeypatch: Any, what: str, **executor: Any) -> None:
    """Trial 0 spins, trial 1 sleeps 60 s, each on one of the 2 workers with another trial beside it. Before:
    the run never ended. Now each worker's watchdog names its blocked trial once it is past its limit and
    the grace, the driver records it as `time_limit`, kills and replaces the worker (``what``: what the reason
    calls it), and retries the other attempt that was on it; the run says it is not clean (exit 4 from the CLI)."""
    import passhat.runner.watchdog as watchdog
    from tests.runner.test_bounded_agents import AGENTS

    monkeypatch.setattr(watchdog, "GRACE_S", 0.5)  # the driver sends it to its workers
    run = bounded(suite=limited(tmp_path, 0.5), agent=f"{AGENTS}:trials_0_and_1_block_for_good", trials=4,
                  concurrency=4, out=tmp_path / "run", sanity=False, **executor)
    records = by_key(run.folder)
    assert len(records) == 4
    for trial in (0, 1):
        blocked = records[("add-note", trial)]
        assert (blocked.outcome, blocked.end_reason, blocked.attempt) == ("fail", "time_limit", 1)
        assert f"trial add-note#{trial}'s agent has blocked the event loop" in blocked.error
        assert f"{what} replaced" in blocked.error and "--isolate process" in blocked.error
        assert [c.tool for c in blocked.calls] == ["add_note"]  # what it did before it blocked is kept
    victims = [records[("add-note", t)] for t in (2, 3)]
    assert [r.outcome for r in victims] == ["pass"] * 2  # not the blockers' fail, not an error
    assert all(r.attempt >= 2 for r in victims)  # 3 when its retry went to the other blocked worker
    assert run.manifest.status == "complete" and len(run.manifest.replaced_workers) == 2
    assert all("--isolate process" in why for why in run.manifest.replaced_workers)
    problem = run.incomplete()
    assert problem is not None and problem.startswith("2 worker(s) had to be killed and replaced")
    assert "--isolate process" in problem


def check_a_worker_stuck_in_c_code_is_killed(tmp_path: Path, monkeypatch: Any, what: str, **executor: Any) -> None:
    """The worker cannot report (its watchdog needs the GIL): the driver's deadline for the attempt (limit,
    grace, margin) passes, the worker does not answer, and it is killed; what was in flight on it cannot be
    told apart, so each is an infrastructure error of that attempt, retried."""
    import passhat.runner.dispatch as dispatch
    import passhat.runner.watchdog as watchdog

    monkeypatch.setattr(watchdog, "GRACE_S", 0.5)
    monkeypatch.setattr(dispatch, "DEADLINE_MARGIN_S", 0.5)
    monkeypatch.setattr(dispatch, "ANSWER_WITHIN_S", 2.0)  # a healthy worker on a loaded machine answers
    agent = tmp_path / "gil.py"
    agent.write_text(GIL_HOLDER.format(marker=str(tmp_path / "blocked")))
    run = bounded(suite=limited(tmp_path, 0.5), agent=f"{agent}:agent", trials=4, concurrency=4,
                  out=tmp_path / "run", sanity=False, **executor)
    assert (tmp_path / "blocked").exists()
    records = by_key(run.folder)
    assert [records[("add-note", t)].outcome for t in range(4)] == ["pass"] * 4, [r.error for r in records.values()]
    assert sorted(r.attempt for r in records.values()) == [1, 1, 2, 2]  # the blocker and the trial beside it
    (why,) = run.manifest.replaced_workers
    assert why.startswith(f"{what} replaced") and "did not answer" in why and "add-note#0" in why
    assert "--isolate process" in why and run.incomplete() is not None
