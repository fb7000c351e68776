"""The runner: agents that misbehave fail their trial, never the run; records stream and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from passhat.runner import RunStore

NOTES = Path(__file__).parents[1] / "data" / "notes"


def records(out: Path) -> list[Any]:
    return RunStore(out).load()


def failed(rec: Any) -> dict[str, str]:
    return {g.name: g.reason for g in rec.grades if g.required and not g.passed}


def test_good_agent_passes_every_trial(run_notes: Any) -> None:
    recs = records(run_notes("good", trials=3))
    assert [r.outcome for r in recs] == ["pass"] * 3
    assert sorted(r.trial for r in recs) == [0, 1, 2]
    assert len({r.seed for r in recs}) == 3
    assert recs[0].diff["notes"][0]["kind"] == "inserted"


def test_duplicate_write_fails_on_the_row_count(run_notes: Any) -> None:
    rec = records(run_notes("twice", trials=1))[0]
    assert rec.outcome == "fail"
    assert "expected 1, actual 2" in " ".join(failed(rec).values())


def test_agent_exception_fails_the_trial_with_its_traceback(run_notes: Any) -> None:
    recs = records(run_notes("raises", trials=2))
    assert len(recs) == 2 and all(r.outcome == "fail" and r.end_reason == "agent_error" for r in recs)
    assert "ValueError: agent bug" in recs[0].error
    assert "agent_completed" in failed(recs[0])


def test_hung_agent_is_stopped_by_the_time_limit(run_notes: Any, tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    text = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))
    (cases / "c.yaml").write_text(text + "limits: {max_seconds: 0.2}\n")
    for agent in ("hangs", "sync_hangs"):
        rec = records(run_notes(agent, trials=1, cases=cases))[0]
        assert rec.outcome == "fail" and rec.end_reason == "time_limit"
        assert "within_limits" in failed(rec)


def test_sync_function_agents_work(run_notes: Any) -> None:
    assert [r.outcome for r in records(run_notes("sync_good", trials=2))] == ["pass", "pass"]


def test_vandal_fails_for_every_reason_it_earned(run_notes: Any) -> None:
    rec = records(run_notes("vandal", trials=1))[0]
    reasons = failed(rec)
    assert "no_denied_calls" in reasons and "N-2" in reasons["no_denied_calls"]
    assert "no_unknown_tools" in reasons and "fly_to_moon" in reasons["no_unknown_tools"]
    assert "outside the allowed scope" in reasons["unchanged_except()"]
    statuses = [c.status for c in rec.calls]
    assert statuses == ["ok", "ok", "denied", "unknown_tool", "invalid_arguments", "exception"]
    invalid = next(g for g in rec.grades if g.name == "valid_arguments")
    assert not invalid.passed and not invalid.required


def test_loops_and_step_limits_fail(run_notes: Any) -> None:
    rec = records(run_notes("looper", trials=1))[0]
    assert "list_notes called 3 times" in failed(rec)["no_loop"]
    rec = records(run_notes("spinner", trials=1))[0]
    assert rec.end_reason == "step_limit" and len(rec.calls) == 30


def test_infrastructure_errors_are_retried_then_recorded_apart(run_notes: Any, monkeypatch: Any) -> None:
    from passhat.world.sqlite_kind import SqliteImage

    real = SqliteImage.open  # where a trial's world is made (the world seam: docs/design/019)
    calls = {"n": 0}

    def flaky_open(image: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("disk vanished")
        return real(image)

    monkeypatch.setattr(SqliteImage, "open", flaky_open)
    recs = records(run_notes("good", trials=1))
    assert recs[0].outcome == "pass" and recs[0].attempt == 2

    def broken_open(image: Any) -> Any:
        raise OSError("disk vanished")

    monkeypatch.setattr(SqliteImage, "open", broken_open)
    out = run_notes("twice", trials=2)
    recs = records(out)
    assert [r.outcome for r in recs] == ["error", "error"] and "disk vanished" in recs[0].error
    from passhat.results import build_summary

    summary = build_summary(recs, RunStore(out).manifest())
    case = summary.cases[0]
    assert case.n == 0 and case.errors == 2 and summary.suite.errors == 2
    assert summary.suite.pass_hat_k == {}


def test_existing_run_folder_is_not_overwritten(run_notes: Any) -> None:
    from passhat.errors import RunError

    run_notes("good", trials=1)
    with pytest.raises(RunError, match="--resume"):
        run_notes("good", trials=1)


def _run_cli(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from passhat.cli import main

    r = CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", f"{NOTES / 'agents.py'}:good",
                                  "--trials", "1", "-q", *args])
    return r.exit_code, r.output


@pytest.mark.parametrize("tail", [(), ("--resume",), ("sub",)])
def test_a_file_as_out_says_it_must_be_a_folder(tmp_path: Path, tail: tuple[str, ...]) -> None:
    """Not just "AFILE: File exists": what is wrong and what --out must be (exit 2, one line)."""
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    out = afile / tail[0] if tail == ("sub",) else afile
    code, output = _run_cli("--out", str(out), *[t for t in tail if t.startswith("--")])
    assert code == 2 and f"{afile} is a file, not a" in output and len(output.strip().splitlines()) == 1, output
    assert afile.read_text() == "mine\n"


def test_a_folder_in_place_of_summary_json_is_named_and_no_record_is_lost(tmp_path: Path) -> None:
    """The error names summary.json (it named the temporary summary.json.tmp), leaves no temporary file
    behind, and trials.jsonl is untouched; once the folder is gone, --resume finishes the run."""
    out = tmp_path / "run"
    assert _run_cli("--out", str(out))[0] == 0
    trials = (out / "trials.jsonl").read_bytes()
    (out / "summary.json").unlink()
    (out / "summary.json").mkdir()
    code, output = _run_cli("--out", str(out), "--resume")
    assert code == 2 and output.strip() == f"error: {out / 'summary.json'}: Is a directory", output
    assert (out / "trials.jsonl").read_bytes() == trials and not (out / "summary.json.tmp").exists()
    (out / "summary.json").rmdir()
    assert _run_cli("--out", str(out), "--resume")[0] == 0
    assert (out / "trials.jsonl").read_bytes() == trials and (out / "summary.json").is_file()


def test_partial_last_line_is_dropped_and_truncated(run_notes: Any) -> None:
    out = run_notes("good", trials=2)
    path = out / "trials.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"case_id": "add-note", "tri')
    store = RunStore(out)
    assert len(store.load()) == 2
    store.open_for_append()
    store.close()
    assert path.read_bytes() == whole


def test_killed_run_resumes_without_losing_or_duplicating_trials(tmp_path: Path) -> None:
    """SIGKILL a real `passhat run` part-way, resume it, and count records."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(NOTES)}
    cmd = [sys.executable, "-m", "passhat", "run", str(NOTES / "cases"), "--agent", "agents:slow",
           "--trials", "12", "-j", "2", "--out", str(out), "-q"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    trials = out / "trials.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if trials.exists() and trials.read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = len(RunStore(out).load())
    assert 3 <= before < 12
    done = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    recs = RunStore(out).load()
    keys = [(r.case_id, r.trial) for r in recs]
    assert len(keys) == 12 and len(set(keys)) == 12
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["resumed_at"]) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"][0]["n"] == 12


def test_a_corrupt_line_in_the_middle_is_an_error_not_a_silent_skip(run_notes: Any) -> None:
    from passhat.errors import RunError

    out = run_notes("good", trials=3)
    path = out / "trials.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b'{"case_id": "add-note", "trial": 9, "oops"}\n' + b"".join(lines[1:]))
    with pytest.raises(RunError, match=r"trials.jsonl:2: not a trial record"):
        RunStore(out).load()
