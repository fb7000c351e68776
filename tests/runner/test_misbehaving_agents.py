"""Anything an in-process agent does is the agent's `fail`, never the run's end (issue 10, items 3 and 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from passhat.results import build_summary
from passhat.runner import RunStore

NOTES = Path(__file__).parents[1] / "data" / "notes"


def limited_cases(tmp_path: Path, extra: str = "") -> Path:
    cases = tmp_path / "cases"
    cases.mkdir()
    text = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))
    (cases / "c.yaml").write_text(text + extra)
    return cases


@pytest.mark.parametrize(("agent", "evidence"), [
    ("exits", "SystemExit(3)"),
    ("interrupts", "KeyboardInterrupt()"),
    ("cancels_itself", "raised CancelledError itself"),
])
def test_an_agent_that_raises_what_would_stop_asyncio_fails_its_trials_only(run_notes: Any, agent: str,
                                                                          evidence: str) -> None:
    recs = RunStore(run_notes(agent, trials=3)).load()
    assert [(r.outcome, r.end_reason) for r in recs] == [("fail", "agent_error")] * 3
    assert evidence in recs[0].error and "Traceback" in recs[0].error


def test_arguments_no_json_can_hold_are_recorded_and_graded_not_fatal(run_notes: Any) -> None:
    out = run_notes("odd_arguments", trials=2)
    recs = RunStore(out).load()  # the records were written and read back
    assert [r.outcome for r in recs] == ["pass", "pass"]
    first, cyclic, fine = recs[0].calls
    assert first.status == "invalid_arguments" and first.arguments["priority"] == 2
    assert first.arguments["3"] == "mixed key" and first.arguments["big"].startswith("<integer of ")
    assert first.arguments["obj"].startswith("<object ")
    assert cyclic.arguments["self"] == "<cycle>" and cyclic.status == "invalid_arguments"
    assert fine.status == "ok" and fine.arguments == {"title": "call mom", "priority": 2}
    summary = build_summary(RunStore(out).iter_records(), RunStore(out).manifest())
    assert summary.suite.pass_hat_k[1].estimate == 1.0


def test_a_plain_function_agent_that_never_returns_does_not_keep_the_run_from_finishing(tmp_path: Path) -> None:
    cases = limited_cases(tmp_path, "limits: {max_seconds: 0.5}\n")
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "passhat", "run", str(cases), "--agent", f"{NOTES / 'agents.py'}:sleeps_past_limit",
           "--trials", "2", "--out", str(out), "--no-sanity", "--no-report", "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["suite"]["pass_hat_k"]["1"]["estimate"] == 0.0
    assert [json.loads(line)["end_reason"] for line in (out / "trials.jsonl").read_text().splitlines()] == ["time_limit"] * 2


def test_a_second_run_on_the_same_folder_is_refused_while_the_first_writes(tmp_path: Path) -> None:
    """Two CI jobs with one --out used to interleave duplicate records counted into n."""
    cases = limited_cases(tmp_path)
    out, release = tmp_path / "run", tmp_path / "release"
    env = {**os.environ, "RELEASE_FILE": str(release)}
    cmd = [sys.executable, "-m", "passhat", "run", str(cases), "--agent", f"{NOTES / 'agents.py'}:waits_for_release",
           "--trials", "3", "--out", str(out), "--no-sanity", "--no-report", "-q"]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        lock, deadline = out / ".passhat.lock", time.monotonic() + 60
        while not (lock.exists() and lock.read_text().startswith("pid")) and time.monotonic() < deadline:
            time.sleep(0.02)
        for second_cmd in (cmd, [*cmd, "--resume"]):
            second = subprocess.run(second_cmd, capture_output=True, text=True, timeout=120, env=env)
            assert second.returncode == 2
            assert f"{out} is being written by another passhat run (pid {first.pid} since" in second.stderr
    finally:
        release.touch()
        first.communicate(timeout=120)
    assert first.returncode == 0
    keys = [(r["case_id"], r["trial"]) for r in map(json.loads, (out / "trials.jsonl").read_text().splitlines())]
    assert sorted(keys) == [("add-note", t) for t in range(3)]  # three trials, none twice
    third = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=120, env=env)
    assert third.returncode == 0, third.stderr  # the lock went with the first run


@pytest.mark.parametrize("cost", [float("nan"), float("inf"), -1.0])
def test_an_agent_reporting_a_cost_that_is_not_a_number_fails_its_trial_and_the_run_stays_readable(
        tmp_path: Path, cost: float) -> None:
    import asyncio

    from passhat.cases import load_suite
    from passhat.runner import RunConfig, execute

    async def agent(episode: Any) -> str:
        await episode.call("add_note", {"title": "call mom", "priority": 2})
        episode.report_usage(input_tokens=10, output_tokens=5, cost=cost, model="m")
        return "added"

    out = tmp_path / "run"
    asyncio.run(execute(RunConfig(suite=load_suite(str(limited_cases(tmp_path))), agent=agent, agent_spec="nan",
                                  trials=2, out=out)))
    recs = RunStore(out).load()
    assert [(r.outcome, r.end_reason) for r in recs] == [("fail", "agent_error")] * 2
    assert "cost must be a finite number ≥ 0" in recs[0].error
    build_summary(RunStore(out).iter_records(), RunStore(out).manifest())


def test_a_negative_seed_is_refused_by_the_library_too(tmp_path: Path) -> None:
    from passhat.cases import load_suite
    from passhat.errors import RunError
    from passhat.runner import RunConfig

    with pytest.raises(RunError, match="seed must be ≥ 0, got -5"):
        RunConfig(suite=load_suite(str(limited_cases(tmp_path))), agent=None, agent_spec="x", trials=1, seed=-5)  # type: ignore[arg-type]
