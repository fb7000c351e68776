"""Commands in a workspace copy: real processes, real namespaces where the machine has them."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from passhat.workspace import CommandResult, WorkspaceCopy, WorkspaceError, WorkspaceImage, isolation, run_command
from passhat.workspace import sandbox as sandbox_module
from tests.sandbox.pid1s import pid1

__all__ = ["pid1"]  # a fixture, used by name: the tests of mounts, hiding and capabilities run under both PID 1s

MODES = ["unshare", "none"] if isolation() == "unshare" else ["none"]
needs_unshare = pytest.mark.skipif(isolation() != "unshare",
                                   reason=f"the unshare sandbox is not in use: {sandbox_module.isolation_note()}")


def run(root: Path, command: str, **kw: object) -> CommandResult:
    kw.setdefault("timeout_s", 30)
    return asyncio.run(run_command(root, command, **kw))  # type: ignore[arg-type]


@pytest.fixture
def image(tmp_path: Path) -> Iterator[WorkspaceImage]:
    src = tmp_path / "fixture"
    src.mkdir()
    (src / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (src / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n")
    with WorkspaceImage.from_dir(src) as img:
        yield img


@pytest.fixture
def copy(image: WorkspaceImage) -> Iterator[WorkspaceCopy]:
    with image.restore() as c:
        yield c


@pytest.mark.parametrize("mode", MODES)
def test_exit_codes_and_output(copy: WorkspaceCopy, mode: str) -> None:
    ok = run(copy.root, "echo out; echo err >&2", sandbox=mode)
    assert (ok.exit_code, ok.ok, ok.timed_out, ok.stdout, ok.stderr, ok.isolation) == (0, True, False, "out\n", "err\n", mode)
    bad = run(copy.root, "exit 3", sandbox=mode)
    assert bad.exit_code == 3 and not bad.ok
    killed = run(copy.root, "kill -9 $$", sandbox=mode)
    assert killed.exit_code == 128 + 9


@pytest.mark.parametrize("mode", MODES)
def test_runs_in_the_copy_and_its_writes_show_in_the_diff(copy: WorkspaceCopy, mode: str) -> None:
    result = run(copy.root, "pwd; echo made > made.txt; mkdir -p d && echo x > d/y", sandbox=mode)
    assert result.ok, result.stderr
    assert result.stdout.strip() == str(copy.root)
    assert copy.diff().paths() == ["d/y", "made.txt"]


@pytest.mark.parametrize("mode", MODES)
def test_timeout_kills_the_command_and_its_children(copy: WorkspaceCopy, mode: str, tmp_path: Path) -> None:
    result = run(copy.root, "sleep 100 & echo $! > child.pid; sleep 100", timeout_s=1.0, sandbox=mode)
    assert result.timed_out and result.exit_code is None and not result.ok
    pid = int((copy.root / "child.pid").read_text())
    if mode == "none":  # the same PID namespace as ours: the grandchild must be gone
        assert not _alive(pid)
    else:  # its PID is in the sandbox's namespace; no sleep of that command may be left anywhere
        assert not _running_cmdline(str(copy.root), "sleep")


@pytest.mark.parametrize("mode", MODES)
def test_background_processes_do_not_outlive_the_command(copy: WorkspaceCopy, mode: str) -> None:
    result = run(copy.root, "sleep 100 > /dev/null 2>&1 & echo $! > bg.pid; echo done", sandbox=mode)
    assert result.ok and result.stdout == "done\n"
    if mode == "none":
        assert not _alive(int((copy.root / "bg.pid").read_text()))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _running_cmdline(cwd: str, name: str) -> list[int]:
    """PIDs of processes called ``name`` whose working folder is ``cwd``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") == cwd and (entry / "comm").read_text().strip() == name and _alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("mode", MODES)
def test_output_is_truncated_and_bounded(copy: WorkspaceCopy, mode: str) -> None:
    command = f"{sys.executable} -c \"import sys; sys.stdout.write('x' * 10_000_000); sys.stderr.write('é' * 100)\""
    result = run(copy.root, command, max_output=1000, sandbox=mode)
    assert result.ok and result.truncated
    assert result.stdout == "x" * 1000 + f"\n… [truncated {10_000_000 - 1000:,} bytes]"
    # 200 bytes of 'é' cut at 1000 would not cut; at 101 bytes a character is split and dropped whole
    cut = run(copy.root, command, max_output=101, sandbox=mode)
    assert cut.stderr == "é" * 50 + f"\n… [truncated {200 - 100:,} bytes]"


@pytest.mark.parametrize("mode", MODES)
def test_environment_is_scrubbed(copy: WorkspaceCopy, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSHAT_TEST_SECRET", "sk-do-not-leak")
    result = run(copy.root, "env", env={"GIVEN": "yes"}, sandbox=mode)
    env = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert "PASSHAT_TEST_SECRET" not in env and "sk-do-not-leak" not in result.stdout
    assert env["GIVEN"] == "yes"
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
    assert env["LANG"] == "C.UTF-8" and env["PYTHONDONTWRITEBYTECODE"] == "1" and env["PYTHONHASHSEED"] == "0"
    home, tmp = Path(env["HOME"]), Path(env["TMPDIR"])
    assert copy.root not in home.parents and copy.root not in tmp.parents
    assert not home.exists() and not tmp.exists()  # removed afterwards


@pytest.mark.parametrize("mode", MODES)
def test_home_and_tmpdir_are_writable_and_not_in_the_diff(copy: WorkspaceCopy, mode: str) -> None:
    command = 'echo a > "$HOME/.rc" && echo b > "$TMPDIR/scratch" && cat "$HOME/.rc" "$TMPDIR/scratch"'
    result = run(copy.root, command, sandbox=mode)
    assert result.ok and result.stdout == "a\nb\n", result.stderr
    assert not copy.diff()


# Plugins installed for the harness (entry points) would load in the agent's test run too; one whose package
# is not importable without our PYTHONPATH (an editable install from another folder) would break it.
PYTEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@pytest.mark.parametrize("mode", MODES)
def test_pytest_runs_inside_the_copy(copy: WorkspaceCopy, mode: str) -> None:
    result = run(copy.root, "python -m pytest -q -p no:cacheprovider test_calc.py", sandbox=mode, timeout_s=120, env=PYTEST_ENV)
    assert result.ok, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert not copy.diff()  # no __pycache__, and caches would be ignored anyway
    failing = run(copy.root, "sed -i 's/a + b/a - b/' calc.py && python -m pytest -q test_calc.py", sandbox=mode,
                  timeout_s=120, env=PYTEST_ENV)
    assert failing.exit_code == 1 and "1 failed" in failing.stdout
    assert copy.diff().paths() == ["calc.py"]


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def test_network_is_reachable_without_the_sandbox(copy: WorkspaceCopy, listener: int) -> None:
    """The control for the test below: the same connection works when nothing confines it."""
    result = run(copy.root, f"python -c \"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=5)\"",
                 sandbox="none")
    assert result.ok, result.stderr


@needs_unshare
def test_network_is_unreachable_in_the_sandbox(copy: WorkspaceCopy, listener: int) -> None:
    result = run(copy.root, f"python -c \"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=5)\"",
                 sandbox="unshare")
    assert result.exit_code == 1 and "Network is unreachable" in result.stderr


@needs_unshare
def test_no_writes_outside_the_copy(copy: WorkspaceCopy, image: WorkspaceImage, tmp_path: Path, pid1: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = Path("/tmp") / f"passhat-sandbox-test-{os.getpid()}"
    attempts = {
        "tmp": f"touch {marker}",
        "outside": f'echo leak > "{outside}/file"',
        "master": f'echo leak > "{image.path}/calc.py"',
        "remount": "mount -o remount,bind,rw / && touch /tmp/remounted",
        "nested namespace": f"unshare -r -m sh -c 'mount -o remount,bind,rw / && touch {marker}'",
    }
    for what, command in attempts.items():
        result = run(copy.root, command, sandbox="unshare")
        assert not result.ok, f"{what}: {result}"
    assert not marker.exists() and not (outside / "file").exists() and not Path("/tmp/remounted").exists()
    shm = f"/dev/shm/passhat-{os.getpid()}"
    assert run(copy.root, f"echo private > {shm} && cat {shm}", sandbox="unshare").stdout == "private\n"
    assert not Path(shm).exists()  # /dev/shm is a tmpfs of the sandbox's own
    assert (image.path / "calc.py").read_text().startswith("def add")
    assert run(copy.root, "echo fine > inside.txt", sandbox="unshare").ok  # while the copy stays writable


def test_the_fallback_says_so(copy: WorkspaceCopy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSHAT_SANDBOX", "none")
    assert isolation() == "none"
    assert run(copy.root, "true").isolation == "none"
    monkeypatch.setenv("PASSHAT_SANDBOX", "chroot")
    with pytest.raises(WorkspaceError, match="PASSHAT_SANDBOX='chroot' is not one of auto, unshare, none"):
        isolation()


def test_result_json_round_trip(copy: WorkspaceCopy) -> None:
    result = run(copy.root, "echo hi", sandbox="none")
    data = json.loads(json.dumps(result.to_json()))
    assert data["stdout"] == "hi\n" and data["isolation"] == "none"
    assert CommandResult.from_json(data) == result


def test_bad_arguments_are_named(copy: WorkspaceCopy, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="missing: workspace folder does not exist"):
        run(tmp_path / "missing", "true")
    with pytest.raises(WorkspaceError, match="time limit must be positive"):
        run(copy.root, "true", timeout_s=0)
    with pytest.raises(WorkspaceError, match="command environment: 'A=B'"):
        run(copy.root, "true", env={"A=B": "x"})


@needs_unshare
def test_other_copies_and_the_image_are_not_visible(copy: WorkspaceCopy, image: WorkspaceImage, pid1: str) -> None:
    """Concurrent trials of one case must stay independent: no reading a sibling trial's work."""
    with image.restore() as sibling:
        (sibling.root / "answer.txt").write_text("the sibling's solution\n")
        result = run(copy.root, f'cat "{sibling.root}/answer.txt" || ls "{image.path}" || ls ..', sandbox="unshare")
        assert "solution" not in result.stdout and "calc.py" not in result.stdout
        assert sibling.root.name not in result.stdout and copy.root.name in result.stdout


def test_probe_falls_back_and_says_why(monkeypatch: pytest.MonkeyPatch, copy: WorkspaceCopy) -> None:
    monkeypatch.delenv("PASSHAT_SANDBOX", raising=False)
    monkeypatch.setattr("passhat.sandbox.shutil.which", lambda name: None)
    sandbox_module._probe.cache_clear()
    try:
        assert isolation() == "none"
        assert "'unshare' and 'setpriv' are not both on PATH" in sandbox_module.isolation_note()
        with pytest.raises(WorkspaceError, match="sandbox 'unshare' is not available on this machine"):
            run(copy.root, "true", sandbox="unshare")
        monkeypatch.setenv("PASSHAT_SANDBOX", "unshare")
        with pytest.raises(WorkspaceError, match="PASSHAT_SANDBOX=unshare, but this machine has no working sandbox"):
            isolation()
    finally:
        sandbox_module._probe.cache_clear()


@pytest.mark.parametrize("mode", MODES)
def test_cwd_inside_the_copy(copy: WorkspaceCopy, mode: str) -> None:
    (copy.root / "sub").mkdir()
    result = run(copy.root, "pwd && echo up > ../from_sub.txt", cwd="sub", sandbox=mode)
    assert result.ok, result.stderr
    assert result.stdout.strip() == str(copy.root / "sub")
    assert copy.diff().paths() == ["from_sub.txt"]
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        run(copy.root, "true", cwd="..", sandbox=mode)


ESCAPE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("set", ctypes.c_uint64), ("clr", ctypes.c_uint64), ("prop", ctypes.c_uint64), ("userns", ctypes.c_uint64)]
rw = Attr(0, 1, 0, 0)  # clear MOUNT_ATTR_RDONLY
tmp = os.path.dirname(os.getcwd()).encode()
tries = {
    "mount_setattr rw /": libc.syscall(442, -100, b"/", 0x8000, ctypes.byref(rw), ctypes.sizeof(rw)),
    "remount rw /": libc.mount(b"/", b"/", None, 32 | 4096, None),
    "umount the cover": libc.umount2(tmp, 2),
}
print(" ".join(f"{k}={v}" for k, v in tries.items()))
sys.exit(1 if any(v == 0 for v in tries.values()) else 0)
"""


@needs_unshare
@pytest.mark.parametrize(("how", "pid1"), [("directly", "c"), ("directly", "python"),
                                           ("from a user namespace of its own", "c")], indirect=["pid1"])
def test_the_command_cannot_undo_its_confinement(copy: WorkspaceCopy, how: str, pid1: str) -> None:
    """System calls, not mount(8): util-linux refuses early for a non-root user and would prove nothing."""
    (copy.root / "escape.py").write_text(ESCAPE)
    prefix = "" if how == "directly" else "unshare --user --mount "
    result = run(copy.root, f"{prefix}python escape.py", sandbox="unshare")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.count("=-1") == 3


@needs_unshare
def test_a_command_cancelled_again_while_its_bounds_are_released_leaves_no_private_folder(
        copy: WorkspaceCopy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run stopped mid-command cancels the trial, and a second cancellation (the runner's shutdown) can land
    while the command's cgroups are being emptied: the clean-up must still end. It did not (a ``passhat-cmd-*``
    folder was left behind under SIGTERM on a fresh clone)."""
    import tempfile
    import threading
    import time

    from passhat.sandbox.bounds import Bounded
    from passhat.workspace.bounds import WorkspaceBounds

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    releasing = threading.Event()
    release = Bounded.release

    def slow_release(self: Bounded) -> None:
        releasing.set()
        time.sleep(0.3)  # a cgroup that takes a moment to empty
        release(self)

    monkeypatch.setattr(Bounded, "release", slow_release)

    async def main() -> None:
        task = asyncio.ensure_future(run_command(copy.root, "touch started; sleep 30", timeout_s=60,
                                                 bounds=WorkspaceBounds()))
        while not (copy.root / "started").exists():
            await asyncio.sleep(0.01)
        task.cancel()
        while not releasing.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert [p.name for p in tmp.iterdir() if p.name.startswith("passhat-cmd-")] == []
