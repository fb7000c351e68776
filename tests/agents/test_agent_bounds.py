"""An agent's program cannot take the machine: a fork bomb, a leak, a file written without end each fail
*that* trial, naming the bound and its option, and the run goes on with nothing of it left (docs/agents.md,
docs/design/021). Bad bound values are bad input before any trial.

The programs below stop by themselves well short of harm (a few thousand sleeping processes, 1 GiB, 64 MiB
of file) where a bound did not hold, and a test for a bound this machine cannot enforce is skipped, not run
unbounded: a real fork bomb on a shared machine is the incident these bounds exist to prevent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.agents.bounds import AgentBounds
from passhat.errors import PasshatError
from passhat.sandbox import bounds as sandbox_bounds
from tests.agents.hostile import processes_named

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the bounds are Linux's cgroups and rlimits")

PROGRAMS = Path(__file__).parents[1] / "data" / "programs"  # outside the temporary folder: the sandbox shows it
HOG_AGENT = PROGRAMS / "memory_hog_agent.py"
# trial 0 forks, linearly, not exponentially (each child sleeps; the parent dies at the first fork the
# bound refuses); trial 1, at the same time, does its work as usual
FORKS = f"""
import os, sys, time
if os.environ["PASSHAT_TRIAL"] != "0":
    os.execv(sys.executable, [sys.executable, {str(PROGRAMS / "notes_agent.py")!r}, "good"])
for _ in range(3000):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
print("forked 3000 times: no bound held")
"""
ALLOCATES = """
chunks = []
for _ in range(64):
    chunks.append(bytearray(16 << 20))
print("allocated 1 GiB: no bound held")
"""
WRITES = """
import os
with open(os.path.join(os.environ["TMPDIR"], "agent.log"), "wb") as f:
    for _ in range(64):
        f.write(b"x" * (1 << 20))
print("wrote 64 MiB: no bound held")
"""


def cgroups_here() -> bool:
    return {"pids", "memory"} <= set(sandbox_bounds._own_v1_paths())


def process_bound_holds() -> bool:
    """A pids cgroup, or RLIMIT_NPROC, which never binds root."""
    return cgroups_here() or os.getuid() != 0


@pytest.fixture
def bounded_run(tmp_path: Path, notes_cases: Any) -> Any:
    """Runs the notes case ``trials`` times, one after another, with a program under ``bounds``; returns
    (records, marker): the marker is in every process the program starts (argv), to look for survivors."""
    from passhat.agents import load_agent
    from passhat.agents.confined import AgentSandbox
    from passhat.cases import load_suite
    from passhat.runner import RunConfig, RunStore, execute

    def go(source: str, bounds: AgentBounds, *, trials: int = 2, concurrency: int = 1,
           isolate: str = "none") -> tuple[list[Any], str]:
        """``source``: a cmd: program's text, or with ``isolate="process"`` an agent spec."""
        marker = f"passhat-bounds-{secrets.token_hex(6)}"
        if isolate == "process":
            spec = source
        else:
            program = tmp_path / "agent.py"
            program.write_text(source)
            spec = f"cmd:{sys.executable} {program} {marker}"
        agent = load_agent(spec, isolate=isolate, sandbox=AgentSandbox(bounds=bounds))  # type: ignore[arg-type]
        out = tmp_path / f"run-{marker}"
        cfg = RunConfig(suite=load_suite(str(notes_cases("limits: {max_seconds: 30}\n", name=marker))), agent=agent,
                        agent_spec=spec, trials=trials, out=out, concurrency=concurrency)
        asyncio.run(execute(cfg))
        return sorted(RunStore(out).load(), key=lambda r: r.trial), marker

    return go


def failed_at(records: list[Any], message: str, trials: int = 2) -> None:
    """Every trial ran, each the agent's failure with ``message`` first."""
    assert len(records) == trials
    for rec in records:
        assert (rec.outcome, rec.end_reason) == ("fail", "agent_error"), (rec.outcome, rec.end_reason, rec.error)
        assert rec.error.startswith(message), rec.error


@pytest.mark.skipif(not process_bound_holds(), reason="root without a pids cgroup: RLIMIT_NPROC never binds root")
def test_a_fork_bomb_fails_its_own_trial_at_the_process_bound_and_leaves_nothing(bounded_run: Any) -> None:
    (bomb, beside), marker = bounded_run(FORKS, AgentBounds(processes=32), concurrency=2)
    failed_at([bomb], "the agent's processes reached their bound of 32 (--agent-processes); the agent command "
                      "exited with status 1", trials=1)
    assert "BlockingIOError" in bomb.error and "bounds: 32 processes" in bomb.isolation.details
    assert beside.outcome == "pass", (beside.error, beside.failed_grades())  # the trial running beside it
    assert processes_named(marker) == []  # its sleeping children died with the trial


def test_a_program_past_the_memory_bound_fails_its_trial_naming_it(bounded_run: Any) -> None:
    records, marker = bounded_run(ALLOCATES, AgentBounds(memory=64 << 20))
    failed_at(records, "the agent reached its memory bound of 64 MiB (--agent-memory); the agent command")
    assert "64 MiB of memory" in records[0].isolation.details
    assert processes_named(marker) == []


def test_a_file_written_past_the_file_size_bound_fails_its_trial_naming_it(bounded_run: Any) -> None:
    records, _ = bounded_run(WRITES, AgentBounds(file_size=1 << 20))
    failed_at(records, "a file the agent wrote reached its size bound of 1 MiB (--agent-file-size)")
    assert "File too large" in records[0].error  # Python ignores SIGXFSZ: the write fails with EFBIG
    assert "1 MiB per file (RLIMIT_FSIZE)" in records[0].isolation.details


def test_an_isolated_worker_past_the_memory_bound_fails_its_trial_naming_it(bounded_run: Any) -> None:
    records, _ = bounded_run(f"{HOG_AGENT}:hog", AgentBounds(memory=256 << 20), trials=1, isolate="process")
    failed_at(records, "the agent reached its memory bound of 256 MiB (--agent-memory)", trials=1)


def test_without_cgroups_memory_is_each_process_s_data_and_still_named(
        bounded_run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """RLIMIT_DATA, not RLIMIT_AS: the program's MemoryError (not a cgroup's counter) names the bound."""
    monkeypatch.setattr(sandbox_bounds, "_own_v1_paths", dict)
    records, _ = bounded_run(ALLOCATES, AgentBounds(memory=64 << 20), trials=1)
    failed_at(records, "the agent reached its memory bound of 64 MiB (--agent-memory)", trials=1)
    assert "MemoryError" in records[0].error
    assert "64 MiB of memory (RLIMIT_DATA per process)" in records[0].isolation.details


def test_in_the_fallback_the_bounds_hold_too(bounded_run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSHAT_SANDBOX", "none")
    records, marker = bounded_run(ALLOCATES, AgentBounds(memory=64 << 20), trials=1)
    failed_at(records, "the agent reached its memory bound of 64 MiB (--agent-memory)", trials=1)
    assert records[0].isolation.kind == "fallback" and "bounds: " in records[0].isolation.details
    assert processes_named(marker) == []


def test_the_bounds_are_in_the_manifest(tmp_path: Path, notes_cases: Any) -> None:
    import passhat

    program = tmp_path / "agent.py"
    program.write_text("print('added')\n")
    run = passhat.evaluate(str(notes_cases()), f"cmd:{sys.executable} {program}", trials=1, out=tmp_path / "run",
                           sanity=False, agent_processes="64", agent_memory="512M", agent_file_size=None)
    manifest = json.loads((run.folder / "manifest.json").read_text())
    assert manifest["agent_runtime"]["sandbox"]["bounds"] == {"processes": 64, "memory_bytes": 512 << 20,
                                                             "file_size_bytes": None}


@pytest.mark.parametrize(("option", "value", "message"), [
    ("processes", "0", "--agent-processes 0: must be at least 8"),
    ("processes", -3, "--agent-processes -3: must be at least 8"),
    ("processes", "1.5", "--agent-processes '1.5': expected a whole number of processes"),
    ("processes", True, "--agent-processes True: expected a whole number"),
    ("memory", "2XB", "--agent-memory '2XB' is not a size: expected a number with an optional unit K, M, G or T"),
    ("memory", "-1G", "--agent-memory '-1G' is not a size"),
    ("memory", "0", "--agent-memory 0: must be at least 16 MiB"),
    ("memory", "2048", "--agent-memory 2048: must be at least 16 MiB (a bare number is bytes); did you mean 2048M?"),
    ("file_size", "0", "--agent-file-size 0: must be at least 1 byte"),
    ("file_size", "lots", "--agent-file-size 'lots' is not a size"),
])
def test_bad_bound_values_are_named(option: str, value: Any, message: str) -> None:
    with pytest.raises(PasshatError) as caught:
        AgentBounds.parse(**{option: value})
    assert str(caught.value).startswith(message), str(caught.value)


def test_sizes_and_none_parse_as_documented() -> None:
    assert AgentBounds.parse("none", "1.5G", "512k") == AgentBounds(None, 3 << 29, 512 << 10)
    assert AgentBounds.parse(" 64 ", "64MiB", "NONE") == AgentBounds(64, 64 << 20, None)
    assert AgentBounds.parse() == AgentBounds() == AgentBounds(256, 2 << 30, 1 << 30)


def test_passhat_run_refuses_a_bad_bound_before_any_trial(tmp_path: Path, notes_cases: Any) -> None:
    from passhat.cli import main

    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(notes_cases()), "--agent", "cmd:true", "--agent-memory", "2XB",
                                       "--out", str(out), "--no-sanity"])
    assert result.exit_code == 2, result.output
    assert "--agent-memory '2XB' is not a size" in result.output
    assert not (out / "trials.jsonl").exists()


@pytest.mark.skipif(not cgroups_here(), reason="no v1 pids and memory cgroups to write here")
def test_cgroups_a_killed_harness_left_are_removed_with_what_is_in_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A harness killed outright (SIGKILL, the OOM killer) cannot remove its cgroups: the next one does, and
    kills what is left in them; a live harness's, and another PID namespace's, are left alone."""
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process has now
    namespace = sandbox_bounds._pid_namespace()
    own = sandbox_bounds._own_v1_paths()["pids"]
    names = {"stale": f"passhat-{namespace}-{gone.pid}-{secrets.token_hex(4)}",
             "live": f"passhat-{namespace}-{os.getpid()}-{secrets.token_hex(4)}",
             "elsewhere": f"passhat-{namespace + 1}-{gone.pid}-{secrets.token_hex(4)}"}
    for name in names.values():
        os.mkdir(os.path.join(own, name))
    left = subprocess.Popen(["sleep", "30"])
    try:
        with open(os.path.join(own, names["stale"], "cgroup.procs"), "w") as f:
            f.write(str(left.pid))
        sandbox_bounds._remove_stale.cache_clear()
        made = sandbox_bounds.Cgroups.make(processes=8, memory_bytes=None)
        assert made is not None
        made.remove()
        assert left.wait(timeout=5) == -9  # the orphaned program, killed
        assert not os.path.exists(os.path.join(own, names["stale"]))
        assert os.path.isdir(os.path.join(own, names["live"])) and os.path.isdir(os.path.join(own, names["elsewhere"]))
    finally:
        left.kill()
        for name in names.values():
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(own, name))
