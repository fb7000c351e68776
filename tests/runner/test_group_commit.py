"""The run's writer: records land exactly once as whole lines, are reported only once fsync'd, and a
write that fails ends the run with its error while the durable records stay."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from passhat.agents import python_agent
from passhat.cases import load_suite
from passhat.errors import RunError
from passhat.runner import RunConfig, RunStore, TrialRecord, execute
from passhat.runner.commit import GroupCommit

NOTES = Path(__file__).parents[1] / "data" / "notes"


def config(out: Path, agent: str = "good", trials: int = 40, concurrency: int = 16) -> RunConfig:
    return RunConfig(suite=load_suite(str(NOTES / "cases")), agent=python_agent(f"{NOTES / 'agents.py'}:{agent}"),
                     agent_spec=agent, trials=trials, concurrency=concurrency, out=out)


def is_trials_file(fd: int) -> bool:
    return os.readlink(f"/proc/self/fd/{fd}").endswith("trials.jsonl")


def line_ends(path: Path) -> dict[tuple[str, int], int]:
    """Each record's key and the file offset just past its line; every line must be whole and parse."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    ends: dict[tuple[str, int], int] = {}
    offset = 0
    for line in data.splitlines(keepends=True):
        offset += len(line)
        rec = json.loads(line)
        key = (rec["case_id"], rec["trial"])
        assert key not in ends, f"{key} written twice"
        ends[key] = offset
    return ends


@pytest.fixture
def some_records(tmp_path: Path) -> list[TrialRecord]:
    out = tmp_path / "source"
    asyncio.run(execute(config(out, trials=1, concurrency=1)))
    (one,) = RunStore(out).load()
    return [one.model_copy(update={"trial": i}) for i in range(200)]


pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc to name a descriptor's file")


def test_records_emitted_together_share_one_write_and_fsync(tmp_path: Path, some_records: list[TrialRecord],
                                                             monkeypatch: Any) -> None:
    syncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (syncs.append(os.fstat(fd).st_size), real_fsync(fd))[1])
    store = RunStore(tmp_path / "run")
    store.open_for_append()
    reported: list[TrialRecord] = []

    async def main() -> GroupCommit:
        writer = GroupCommit(store, reported.append)
        for record in some_records:  # all queued before the first batch starts: one batch
            writer.submit(record)
        await writer.drain()
        return writer

    writer = asyncio.run(main())
    store.close()
    assert writer.batches == 1 and len(syncs) == 1
    assert [r.trial for r in reported] == list(range(200))
    assert sorted(t for _, t in line_ends(store.trials_path)) == list(range(200))


def test_records_that_finish_during_a_sync_form_the_next_batch(tmp_path: Path, some_records: list[TrialRecord],
                                                                monkeypatch: Any) -> None:
    release = threading.Event()
    real_fsync = os.fsync
    synced: list[int] = []

    def slow_fsync(fd: int) -> None:
        release.wait(10)  # the first sync holds until the test has queued more records
        synced.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    store = RunStore(tmp_path / "run")
    store.open_for_append()
    reported: list[tuple[int, int]] = []

    async def main() -> GroupCommit:
        writer = GroupCommit(store, lambda r: reported.append((r.trial, synced[-1])))
        writer.submit(some_records[0])
        await asyncio.sleep(0.05)  # the first batch is in its fsync, in the writer's thread
        assert reported == []  # not durable yet, so not reported
        for record in some_records[1:100]:
            writer.submit(record)
        release.set()
        await writer.drain()
        return writer

    writer = asyncio.run(main())
    store.close()
    ends = line_ends(store.trials_path)
    assert writer.batches == 2 and len(synced) == 2
    assert [t for t, _ in reported] == list(range(100))
    assert all(ends[("add-note", t)] <= synced_len for t, synced_len in reported)


def test_a_record_is_reported_only_after_its_line_is_fsynced(tmp_path: Path, monkeypatch: Any) -> None:
    synced = [0]
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        real_fsync(fd)
        if is_trials_file(fd):
            synced.append(os.fstat(fd).st_size)

    monkeypatch.setattr(os, "fsync", spy)
    reported: dict[tuple[str, int], int] = {}

    def on_record(record: TrialRecord) -> None:
        assert record.key not in reported
        reported[record.key] = synced[-1]

    out = tmp_path / "run"
    asyncio.run(execute(config(out, trials=60, concurrency=16), on_record=on_record))
    ends = line_ends(out / "trials.jsonl")
    assert set(reported) == set(ends) and len(ends) == 60
    late = {key: (ends[key], synced_len) for key, synced_len in reported.items() if ends[key] > synced_len}
    assert not late, f"reported before their line was fsync'd: {late}"


def test_a_failing_write_is_the_runs_error_and_durable_records_stay(tmp_path: Path, monkeypatch: Any) -> None:
    real_write = os.write
    batches = [0]

    def disk_fills_up(fd: int, data: Any) -> int:
        if is_trials_file(fd):
            batches[0] += 1
            if batches[0] >= 2:  # -j 4: at most 4 records precede the first batch, so a second comes
                half = bytes(data)[: len(data) // 2]
                real_write(fd, half)  # part of the batch reaches the file, then the disk is full
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", disk_fills_up)
    reported: list[tuple[str, int]] = []
    out = tmp_path / "run"
    with pytest.raises(RunError, match=r"trials.jsonl: cannot write trial records \(No space left on device\)"):
        asyncio.run(execute(config(out, trials=40, concurrency=4), on_record=lambda r: reported.append(r.key)))
    ends = line_ends(out / "trials.jsonl")  # whole lines only: the failed batch's part was cut
    assert 1 <= len(reported) < 40 and sorted(ends) == sorted(reported)
    assert RunStore(out).manifest().status == "running"

    monkeypatch.setattr(os, "write", real_write)
    asyncio.run(execute(config(out, trials=40, concurrency=4), resume=True))
    keys = [(r.case_id, r.trial) for r in RunStore(out).load()]
    assert sorted(keys) == [("add-note", t) for t in range(40)]


def test_a_run_killed_among_many_concurrent_trials_leaves_whole_lines_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(NOTES), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "passhat", "run", str(NOTES / "cases"), "--agent", "agents:slow",
           "--trials", "64", "-j", "16", "--out", str(out), "-q"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    trials = out / "trials.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if trials.exists() and trials.read_bytes().count(b"\n") >= 16:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = line_ends(trials)  # whole lines only, each record once
    assert 16 <= len(before) < 64
    done = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(line_ends(trials)) == [("add-note", t) for t in range(64)]
