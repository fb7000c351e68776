"""Ctrl-C and SIGTERM end ``passhat run`` in every state, exit 130, and leave a folder that reads and resumes.

Through a real process (signals are process-wide). Each state that once kept a run alive is here: the
agent's import never returning (SIGTERM was caught, and the import blocked the event loop, so
``timeout 150 passhat run`` ran on for minutes), a trial waiting on its agent, and a trial whose agent
blocks the event loop (only :func:`passhat.shutdown.hard_exit` can end that one). The hang guard on each
wait is generous (it is not a timing assertion): before the fix these processes never ended.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import passhat
from passhat.cli import main

NOTES = Path(__file__).parents[1] / "data" / "notes"
SRC = Path(passhat.__file__).parents[1]  # the passhat under test, in the child too
HANG_GUARD_S = 60

AGENTS = """\
import asyncio, os, time

if os.environ.get("HANG_IMPORT"):
    open(os.environ["HANG_IMPORT"], "w").close()
    while True:
        time.sleep(0.05)

async def waits(episode):  # trials 0 and 1 finish; later ones wait on a "model" until stopped
    if os.environ.get("STOP_TEST") and episode.trial >= 2:
        await asyncio.sleep(600)
    return await good(episode)

async def spins(episode):  # later trials block the event loop itself: no cancellation can reach them
    if os.environ.get("STOP_TEST") and episode.trial >= 2:
        open(os.environ["STOP_TEST"], "w").close()
        while True:
            pass
    return await good(episode)

async def good(episode):
    await episode.call("add_note", {"title": "call mom", "priority": 2})
    return "added"
"""


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    path = tmp_path / "stop_agents.py"
    path.write_text(AGENTS)
    return path


EXECUTORS = pytest.mark.parametrize("executor", ["local", "processes"])
"""Where the trials run: in the run's process, or in a worker process it forked (which the run stops)."""


def start(agent: str, out: Path, executor: str = "local", **env: str) -> subprocess.Popen[str]:
    """``passhat run`` in a process of its own; ``STOP_GRACE_S`` in ``env`` sets :data:`passhat.shutdown.STOP_GRACE_S`
    there (the wait before a stop that cannot finish normally ends the process)."""
    argv = [sys.executable, "-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "import passhat.shutdown as s; s.STOP_GRACE_S = float(os.environ.get('STOP_GRACE_S', s.STOP_GRACE_S)); "
            "from passhat.cli import main; sys.argv[0] = 'passhat'; main()",
            "run", str(NOTES / "cases"), "--agent", agent, "-k", "4", "-j", "1", "--out", str(out), "-q",
            "--no-report", "--no-sanity", "--executor", executor]
    return subprocess.Popen(argv, env={**os.environ, "PYTHONPATH": str(SRC), **env}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(proc: subprocess.Popen[str], ready: Callable[[], bool]) -> None:
    for _ in range(HANG_GUARD_S * 20):
        if ready():
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended before it was stopped: {proc.communicate()}")
        threading.Event().wait(0.05)
    proc.kill()
    pytest.fail("the run never reached the state to stop it in")


def stop(proc: subprocess.Popen[str], signum: int) -> str:
    proc.send_signal(signum)
    try:
        _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the run did not stop")
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    return stderr


def lines(out: Path) -> int:
    path = out / "trials.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def resume(agent: str, out: Path) -> Any:
    return CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", agent, "-k", "4", "-j", "1",
                                     "--out", str(out), "-q", "--no-report", "--no-sanity", "--resume"])


def test_sigterm_while_the_agent_import_hangs(tmp_path: Path, agents: Path) -> None:
    marker = tmp_path / "importing"
    proc = start(f"{agents}:good", tmp_path / "run", HANG_IMPORT=str(marker))
    wait_for(proc, marker.exists)
    stop(proc, signal.SIGTERM)
    assert lines(tmp_path / "run") == 0


@EXECUTORS
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_while_a_trial_waits_keeps_the_finished_trials(tmp_path: Path, agents: Path, signum: int,
                                                              executor: str) -> None:
    out = tmp_path / "run"
    proc = start(f"{agents}:waits", out, executor, STOP_TEST="1")
    wait_for(proc, lambda: lines(out) == 2)
    stderr = stop(proc, signum)
    assert lines(out) == 2 and "--resume --out" in stderr, stderr
    done = resume(f"{agents}:waits", out)
    assert done.exit_code == 0, done.output
    assert lines(out) == 4


@EXECUTORS
def test_sigterm_while_an_agent_blocks_the_event_loop(tmp_path: Path, agents: Path, executor: str) -> None:
    """Cancellation cannot reach a loop that never yields: the deadline ends the process, records kept. With
    worker processes, the blocked loop is a worker's: the driver stops, and the worker dies with it."""
    out, spinning = tmp_path / "run", tmp_path / "spinning"
    # locally the blocked loop never lets the stop finish, so the whole grace (4 s) is waited: 1 s proves the
    # same; with worker processes the driver waits half the grace for the held worker, then kills it and stops
    # normally, which needs the default grace's room on a loaded machine
    grace = {"STOP_GRACE_S": "1"} if executor == "local" else {}
    proc = start(f"{agents}:spins", out, executor, STOP_TEST=str(spinning), **grace)
    wait_for(proc, spinning.exists)
    stderr = stop(proc, signal.SIGTERM)
    if executor == "local":
        assert "stopped without waiting further" in stderr, stderr
    else:  # the driver's loop is free: it kills the held worker and stops, within its grace
        assert "stopped without waiting further" not in stderr and "--resume --out" in stderr, stderr
    assert lines(out) == 2, "the two finished trials, queued behind the blocked loop, were written on the way out"
    done = resume(f"{agents}:spins", out)
    assert done.exit_code == 0, done.output
    assert lines(out) == 4


@pytest.fixture
def shutdown() -> Iterator[Any]:
    from passhat import shutdown

    shutdown.reset()
    yield shutdown
    shutdown.reset()  # cancels the deadline a request armed, or it would end this test process


def test_a_stop_request_from_another_thread_cancels_the_registered_work(shutdown: Any) -> None:
    """The hook a watchdog thread calls: the run's task is cancelled on its own loop."""
    import asyncio

    async def work() -> str:
        with shutdown.stoppable():
            threading.Thread(target=shutdown.request_stop, args=("watchdog",)).start()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                return "cancelled"
        return "finished"

    assert asyncio.run(work()) == "cancelled"
    assert shutdown.stop_requested()


def test_work_registered_after_a_stop_request_is_cancelled_at_once(shutdown: Any) -> None:
    import asyncio

    threading.Thread(target=shutdown.request_stop).start()
    threading.Event().wait(0.1)

    async def work() -> None:
        with shutdown.stoppable():
            await asyncio.sleep(30)

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(work())
