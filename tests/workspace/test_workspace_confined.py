"""Workspace copies that neither commands nor agents can misuse (docs/design/021): the file tools open
beneath the copy's folder, so a link swapped in mid-call never sends a write outside; a hostile command
escapes nowhere; a command past the copy's disk, process or memory bound gets a tool error naming it."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from passhat.domain import load_domain
from passhat.workspace import WorkspaceBounds, WorkspaceImage, run_command
from tests.agents.hostile import PROGRAM, Mailbox, closed_port, escapes, processes_named
from tests.workspace.test_workspace_regime import DOMAIN_PY, Tools, isolated, make_suite, needs_unshare

__all__ = ["isolated"]  # a fixture, used by name

BOUNDED_PY = DOMAIN_PY.replace('command_env=', 'workspace_bounds=WorkspaceBounds(disk_mb=8, processes=32, '
                                              'memory_mb=256), command_env=').replace(
    "from passhat.domain import Domain", "from passhat.domain import Domain\nfrom passhat.workspace import WorkspaceBounds")


SWAPPER = """
import ctypes, os, sys
root, outside = sys.argv[1:]
folder, link = os.path.join(root, "d").encode(), os.path.join(root, "l").encode()
os.symlink(outside, link)
exchange = ctypes.CDLL(None, use_errno=True).renameat2
while True:  # "d" is the folder half of the time and a link out the other half (RENAME_EXCHANGE: atomic)
    exchange(-100, folder, -100, link, 2)
"""


@pytest.fixture
def bounded(tmp_path: Path, isolated: dict[str, Path]) -> Iterator[Tools]:
    make_suite(tmp_path / "suite", {}, domain=BOUNDED_PY)
    t = Tools(load_domain(str(tmp_path / "suite" / "domain.py")))
    yield t
    t.world.close()


def test_write_file_racing_a_folder_swapped_for_a_link_never_writes_outside(bounded: Tools, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (bounded.root / "d").mkdir()
    # what an agent's background process does, on another core: the folder, then a link out, again and again
    # (a thread of this process would hold the GIL between write_file's system calls and never race them)
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(bounded.root), str(outside)])
    try:
        answers = [bounded("write_file", path=f"d/f{i}.txt", content="x") for i in range(1500)]
    finally:
        swapper.kill()
        swapper.wait()
    assert list(outside.iterdir()) == []
    assert any(a.status == "ok" for a in answers)  # the race was real: some writes landed, inside
    refused = {a.error for a in answers if a.status != "ok"}
    assert all("outside the workspace" in e or "cannot write" in e or "cannot resolve" in e for e in refused if e)


def test_delete_and_list_racing_a_folder_swapped_for_a_link_never_act_outside(bounded: Tools, tmp_path: Path) -> None:
    """delete_file and list_dir resolved by path once: with a link swapped in between the check and the act,
    a delete removed (and a listing showed) a file of the folder the link points to."""
    outside = tmp_path / "outside"
    outside.mkdir()
    names = [f"f{i}.txt" for i in range(300)]
    for name in names:
        (outside / name).write_text("keep")
    (bounded.root / "d").mkdir()
    for name in names:
        (bounded.root / "d" / name).write_text("mine")
    (bounded.root / "d" / "only-inside.txt").write_text("mine")
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(bounded.root), str(outside)])
    try:
        deleted = [bounded("delete_file", path=f"d/{name}") for name in names]
        listed = [bounded("list_dir", path="d") for _ in range(300)]
    finally:
        swapper.kill()
        swapper.wait()
    assert sorted(p.name for p in outside.iterdir()) == sorted(names)  # nothing outside was deleted
    assert all((outside / name).read_text() == "keep" for name in names)
    assert any(a.status == "ok" for a in deleted)  # the race was real: some deletes happened, inside
    shown = [a for a in listed if a.status == "ok"]
    assert shown and all(any(e["name"] == "only-inside.txt" for e in a.result["entries"]) for a in shown)


def test_a_command_past_the_disk_bound_gets_a_tool_error_naming_it(bounded: Tools) -> None:
    call = bounded("run_command", command="head -c 20000000 /dev/zero > big")
    assert call.status == "tool_error" and "exceeded the workspace's 8 MB disk bound" in (call.error or "")
    assert (bounded.root / "big").stat().st_size <= 8 * 1024 * 1024
    assert bounded("run_command", command="rm big && echo ok").ok  # within the bound, commands work


def test_a_fork_bomb_stops_at_the_process_bound_with_a_tool_error(bounded: Tools) -> None:
    call = bounded("run_command", command="for i in $(seq 100); do sleep 3 & done; wait", timeout=30)
    assert call.status == "tool_error" and "bound of 32 processes" in (call.error or "")


def test_a_command_past_the_memory_bound_gets_a_tool_error_naming_it(bounded: Tools) -> None:
    call = bounded("run_command", command=f"{sys.executable} -c 'x = bytearray(600 * 1024 * 1024)'")
    assert call.status == "tool_error" and "exceeded the workspace's 256 MB memory bound" in (call.error or "")
    assert bounded("run_command", command=f"{sys.executable} -c 'x = bytearray(16 * 1024 * 1024)'").ok


def test_bad_bounds_are_named() -> None:
    from passhat.workspace import WorkspaceError

    with pytest.raises(WorkspaceError, match=r"workspace_bounds.disk_mb: 0 is not a whole number"):
        WorkspaceBounds(disk_mb=0)


def test_copies_are_private_in_a_private_parent(bounded: Tools) -> None:
    assert bounded.root.stat().st_mode & 0o777 == 0o700
    assert bounded.root.parent.name.startswith("passhat-copies-") and bounded.root.parent.stat().st_mode & 0o777 == 0o700


@needs_unshare
def test_a_hostile_workspace_command_escapes_nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    source = tmp_path / "repo"
    source.mkdir()
    (source / "a.txt").write_text("a\n")
    image = WorkspaceImage.from_dir(source)
    mailbox, closed = Mailbox(), closed_port()
    secret = f"PASSHAT_HOSTILE_SECRET_{secrets.token_hex(4)}"
    monkeypatch.setenv(secret, "x")
    marker = f"passhat-hostile-{secrets.token_hex(8)}"
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    (run_folder / "trials.jsonl").write_text("")
    from passhat import sandbox

    sandbox.hide(run_folder)  # as a run's store does while it writes
    try:
        copy, sibling = image.restore(parent=tmp_path), image.restore(parent=tmp_path)
        config = {"harness_pid": os.getpid(), "run_folder": str(run_folder), "sibling": str(sibling.root),
                  "secret": secret, "closed_port": closed.getsockname()[1], "mailbox": mailbox.url, "marker": marker}
        # in the copy, as a command finds what it runs: a checkout under /tmp is hidden from the sandbox
        (copy.root / "hostile.py").write_bytes(PROGRAM.read_bytes())
        # exec: its parent is the sandbox's PID 1, not a shell of its own
        result = asyncio.run(run_command(copy.root, f"exec {sys.executable} hostile.py --command", timeout_s=30,
                                         env={"HOSTILE_CONFIG": json.dumps(config)}))
        assert result.stdout, result.stderr
        found: dict[str, Any] = json.loads(result.stdout)
        assert set(found) >= {"memory", "environ", "descriptors", "run_folder", "sibling", "closed_port"}
        assert escapes(found) == {}
        assert [p.name for p in sibling.root.iterdir()] == ["a.txt"]
        assert processes_named(marker) == []
    finally:
        sandbox.unhide(run_folder)
        mailbox.close()
        closed.close()
        image.close()
