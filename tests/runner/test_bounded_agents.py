"""An in-process agent cannot take the run down (issue 25, item 3; docs/design/022)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from passhat.agents import python_agent
from passhat.cases import load_suite
from passhat.runner import RunConfig, RunStore, execute

DATA = Path(__file__).parents[1] / "data"
AGENTS = DATA / "bounded" / "agents.py"


def limited_cases(tmp_path: Path, limits: str) -> Path:
    cases = tmp_path / "cases"
    cases.mkdir()
    text = (DATA / "notes" / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(DATA / "notes" / "domain.py"))
    (cases / "c.yaml").write_text(text + limits)
    return cases


def run(tmp_path: Path, agent: str, *, trials: int = 2, limits: str = "", concurrency: int = 4) -> list[Any]:
    suite = load_suite(str(limited_cases(tmp_path, limits)))
    out = tmp_path / "run"
    cfg = RunConfig(suite=suite, agent=python_agent(f"{AGENTS}:{agent}"), agent_spec=agent, trials=trials, out=out,
                    concurrency=concurrency)
    asyncio.run(execute(cfg))
    return sorted(RunStore(out).load(), key=lambda r: r.trial)


@pytest.mark.parametrize(("agent", "evidence"), [
    ("raises_base_exception", "Boom('agent-defined BaseException')"),
    ("raises_generator_exit", "GeneratorExit()"),
])
def test_a_base_exception_of_the_agent_fails_its_trial_and_the_run_goes_on(tmp_path: Path, agent: str,
                                                                          evidence: str) -> None:
    recs = run(tmp_path, agent)
    assert [(r.outcome, r.end_reason) for r in recs] == [("fail", "agent_error")] * 2
    assert evidence in recs[0].error and "Traceback" in recs[0].error


@pytest.mark.parametrize("agent", ["blocks_then_answers", "blocks_in_a_subtask"])
def test_an_agent_that_blocks_the_loop_past_its_limit_is_time_limit_whatever_it_answered(tmp_path: Path,
                                                                                        monkeypatch: Any,
                                                                                        agent: str) -> None:
    """`time.sleep(20)` against 3 s was `completed` (and passed); scaled: 0.6 s against 0.2 s."""
    monkeypatch.setenv("PASSHAT_TEST_BLOCK_S", "0.6")
    recs = run(tmp_path, agent, trials=1, limits="limits: {max_seconds: 0.2}\n")
    assert [(r.outcome, r.end_reason) for r in recs] == [("fail", "time_limit")]
    assert "held the event loop" in recs[0].error and "--isolate process" in recs[0].error


def test_a_trial_whose_time_another_agent_took_is_an_error_and_retried_not_a_fail(tmp_path: Path) -> None:
    recs = run(tmp_path, "blocks_trial_zero", trials=2, limits="limits: {max_seconds: 0.6}\n", concurrency=2)
    blocker, victim = recs
    assert (blocker.outcome, blocker.end_reason) == ("fail", "time_limit")
    assert (victim.outcome, victim.attempt) == ("pass", 2)  # its first attempt was the blocker's victim


def test_an_agent_that_never_gives_the_loop_back_aborts_the_run_with_a_record_and_a_pointer(tmp_path: Path) -> None:
    """`cpu_loop` used to leave nothing recorded, a manifest `running`, and a run that had to be killed."""
    cases = limited_cases(tmp_path, "limits: {max_seconds: 0.3}\n")
    out = tmp_path / "run"
    driver = ("import sys; import passhat.runner.watchdog as w; w.GRACE_S = 0.5; "
              "from passhat.cli import main; sys.exit(main())")
    cmd = [sys.executable, "-c", driver, "run", str(cases), "--agent", f"{AGENTS}:spins", "--trials", "1",
           "--out", str(out), "--no-sanity", "--no-report", "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 4, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "run aborted: trial add-note#0" in last and "--isolate process" in last
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "aborted" and "add-note#0" in manifest["aborted_because"]
    (record,) = RunStore(out).load()
    assert (record.outcome, record.end_reason, len(record.calls)) == ("fail", "time_limit", 1)


def test_a_replaced_worker_is_in_the_manifest_at_once_kept_on_resume_and_the_run_is_not_clean(tmp_path: Path) -> None:
    """An executor that gave up on a worker (the Ray executor when an agent blocks one: tests/runner/test_ray.py)
    tells the run, which writes it into the manifest while still running; a resumed run keeps it, and the
    run reports itself incomplete (exit 4) whatever its error rate."""
    import passhat
    from passhat.runner.executor import LocalExecutor

    seen: list[list[str]] = []

    class GivesUpOnce(LocalExecutor):
        async def run(self, cfg: RunConfig, pending: Any, emit: Any, *, replaced: Any = None) -> None:
            if pending:
                replaced("Ray worker replaced: trial add-note#0's agent has blocked the event loop")
                seen.append(json.loads((cfg.out / "manifest.json").read_text())["replaced_workers"])
            await super().run(cfg, pending[:1], emit)  # the second trial is left for the resume

    suite = load_suite(str(limited_cases(tmp_path, "")))
    out = tmp_path / "run"
    cfg = RunConfig(suite=suite, agent=python_agent(f"{AGENTS}:blocks_trial_zero"), agent_spec="x", trials=2, out=out)
    asyncio.run(execute(cfg, executor=GivesUpOnce()))
    asyncio.run(execute(cfg, resume=True))
    assert seen == [["Ray worker replaced: trial add-note#0's agent has blocked the event loop"]]
    manifest = RunStore(out).manifest()
    assert manifest.status == "complete" and manifest.replaced_workers == seen[0]
    problem = passhat.Run.open(out).incomplete(max_error_rate=1.0)
    assert problem is not None and "1 worker(s) had to be killed and replaced" in problem
