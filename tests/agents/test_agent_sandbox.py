"""A hostile agent — a ``cmd:`` program, an ``--isolate process`` worker, a workspace command — tries
every escape the audit found, and each one fails: the harness's memory, environment and descriptors,
the run folder, another live trial's endpoint, a sibling copy, a port nobody allowed, a child that
outlives the run (docs/design/021)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest

from passhat import sandbox
from tests.agents.hostile import PROGRAM, Mailbox, closed_port, escapes, processes_named

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox is Linux's namespaces")


@pytest.fixture
def hostile(tmp_path: Path, notes_cases: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Runs the notes case twice at once with a hostile agent; returns (records, marker, sibling)."""
    from passhat.agents import load_agent
    from passhat.agents.confined import AgentSandbox
    from passhat.cases import load_suite
    from passhat.runner import RunConfig, RunStore, execute

    secret = f"PASSHAT_HOSTILE_SECRET_{secrets.token_hex(4)}"
    monkeypatch.setenv(secret, secrets.token_hex(16))  # in the harness's environment, as an API key would be
    mailbox, closed = Mailbox(), closed_port()
    sibling = tmp_path / "sibling-copy"
    sibling.mkdir()
    marker = f"passhat-hostile-{secrets.token_hex(8)}"

    def go(spec: str, isolate: str = "none") -> list[Any]:
        out = tmp_path / "run"
        config = {"harness_pid": os.getpid(), "run_folder": str(out), "sibling": str(sibling), "secret": secret,
                  "closed_port": closed.getsockname()[1], "mailbox": mailbox.url, "marker": marker}
        monkeypatch.setenv("HOSTILE_CONFIG", json.dumps(config))
        options = AgentSandbox(env=("HOSTILE_CONFIG",), allow_hosts=(f"127.0.0.1:{mailbox.port}",))
        agent = load_agent(spec, isolate=isolate, sandbox=options)  # type: ignore[arg-type]
        cfg = RunConfig(suite=load_suite(str(notes_cases("limits: {max_seconds: 30}\n"))), agent=agent,
                        agent_spec=spec, trials=2, out=out, concurrency=2)
        asyncio.run(execute(cfg))
        return RunStore(out).load()

    try:
        yield go, marker, sibling
    finally:
        mailbox.close()
        closed.close()


def check(records: list[Any], marker: str, sibling: Path, kind: str) -> None:
    assert len(records) == 2
    for rec in records:
        assert rec.outcome == "pass", (rec.error, rec.failed_grades())  # it did its task through its own tools
        assert rec.isolation is not None and rec.isolation.kind == kind
        found = json.loads(rec.reply.removeprefix("added the note; "))
        assert set(found) >= {"memory", "environ", "descriptors", "run_folder", "sibling", "closed_port", "other_trial"}
        assert escapes(found) == {}
    assert list(sibling.iterdir()) == []
    assert processes_named(marker) == []


needs_namespaces = pytest.mark.skipif(sandbox.available() != "unshare", reason=f"no namespaces: {sandbox.available_note()}")


@needs_namespaces
def test_a_hostile_cmd_agent_escapes_nowhere(hostile: Any) -> None:
    go, marker, sibling = hostile
    check(go(f"cmd:{sys.executable} {PROGRAM}"), marker, sibling, "namespaces")


@needs_namespaces
def test_a_hostile_isolated_agent_escapes_nowhere(hostile: Any) -> None:
    go, marker, sibling = hostile
    check(go(f"{PROGRAM}:agent", isolate="process"), marker, sibling, "namespaces")


def test_without_namespaces_the_fallback_still_guards_the_harness_and_kills_every_child(
        hostile: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback (docs/agents.md) does not confine the network or the files; what it promises it keeps:
    the harness's memory, environment and descriptors are closed, nothing the agent starts outlives it."""
    monkeypatch.setenv("PASSHAT_SANDBOX", "none")
    go, marker, _ = hostile
    records = go(f"cmd:{sys.executable} {PROGRAM}")
    assert len(records) == 2
    for rec in records:
        assert rec.isolation is not None and rec.isolation.kind == "fallback"
        assert "harness not dumpable" in rec.isolation.details
        assert rec.outcome == "pass", (rec.outcome, rec.end_reason, rec.error, rec.reply)
        found = json.loads(rec.reply.removeprefix("added the note; "))
        assert {k: v for k, v in escapes(found).items() if k in ("memory", "environ", "descriptors", "child")} == {}
    assert processes_named(marker) == []


def test_agent_options_are_checked_before_any_trial() -> None:
    from passhat.agents.confined import AgentSandbox, parse_allow_host
    from passhat.errors import PasshatError

    assert parse_allow_host("api.example.com") == ("api.example.com", 443)
    assert parse_allow_host("127.0.0.1:8080") == ("127.0.0.1", 8080)
    with pytest.raises(PasshatError, match="the port must be a number"):
        parse_allow_host("127.0.0.1:http")
    with pytest.raises(PasshatError, match="expected HOST or HOST:PORT"):
        AgentSandbox(allow_hosts=("http://x/y",))
    with pytest.raises(PasshatError, match="expected the name of an environment variable"):
        AgentSandbox(env=("A=B",))
    assert AgentSandbox(allow_hosts=("127.0.0.1:9",)).hosts[0].addresses == ("127.0.0.1",)


def test_a_program_in_a_virtual_environment_keeps_its_environment_and_base(tmp_path: Path) -> None:
    """A cmd: agent's own venv (here in the temporary folder, which the sandbox hides): its ``bin/python`` is
    a link out of the environment, so keeping only the resolved path would start a bare interpreter."""
    import subprocess

    from passhat.agents.confined import program_folders

    venv = tmp_path / "agent-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    folders = program_folders(str(venv / "bin" / "python"))
    assert str(venv.resolve()) in folders
    assert os.path.realpath(sys.base_prefix) in folders or os.path.realpath(sys.executable) in folders
    assert program_folders(sys.executable)[0] == os.path.abspath(sys.executable)
