"""The workspace world under a demanding user and a hostile agent: kills, cancellations, abusive tool calls,
records that cannot be rebuilt, git fixtures, concurrent trials, re-grades.

Each test builds a small suite of its own in ``tmp_path`` (``make_suite``) and points the copies and
temporary files there (``isolated``), so leftovers are this test's and nobody else's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import passhat
from passhat.attribution import attribute
from passhat.cases import load_suite
from passhat.cases.assertions import files as file_assertions
from passhat.domain import Domain, load_domain
from passhat.episode import Episode
from passhat.graders import Grade
from passhat.redaction import Redactor
from passhat.regrade.run import regrade_run
from passhat.runner.trial import run_trial
from passhat.tools import ToolBoundary, ToolCall, ToolContext
from passhat.tools import files as file_tools
from passhat.workspace import copies, isolation

SRC = Path(__file__).resolve().parents[2] / "src"
needs_unshare = pytest.mark.skipif(isolation() != "unshare", reason="the unshare sandbox is not available here")

DOMAIN_PY = """\
from pathlib import Path
from passhat.domain import Domain
from passhat.tools.files import WORKSPACE_TOOLS

domain = Domain("ws", workspace=Path(__file__).parent / "repo", policy="Fix bugs; never edit tests.",
                tools=WORKSPACE_TOOLS, command_env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
"""
REPO = {
    "calc.py": "def mean(xs):\n    return sum(xs) / len(xs)\n",
    "tests/test_calc.py": "from calc import mean\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n",
    "tests/conftest.py": "",
    "src/pkg/mod.py": "X = 1\n",
    "src/top.py": "Y = 2\n",
    "run.sh": "#!/bin/sh\necho hi\n",
    "LICENSE": "MIT\n",
}


def make_suite(folder: Path, cases: dict[str, str], *, repo: dict[str, str] | None = None,
               domain: str = DOMAIN_PY) -> Path:
    """A suite folder: ``domain.py``, its workspace ``repo/`` and one case file per entry of ``cases``
    (``assertions:`` and anything else after ``instruction``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "domain.py").write_text(domain)
    for rel, text in (REPO if repo is None else repo).items():
        path = folder / "repo" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if (folder / "repo" / "run.sh").exists():
        os.chmod(folder / "repo" / "run.sh", 0o755)
    (folder / "cases").mkdir(exist_ok=True)
    for cid, body in cases.items():
        (folder / "cases" / f"{cid}.yaml").write_text(f"id: {cid}\ndomain: ../domain.py\ninstruction: x\n"
                                                     + textwrap.dedent(body))
    return folder / "cases"


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Workspace copies in ``ws/``, images and commands' private folders in ``tmp/``: both must be empty
    once a run is over, whatever happened to it."""
    folders = {"ws": tmp_path / "ws", "tmp": tmp_path / "tmp"}
    for folder in folders.values():
        folder.mkdir()
    monkeypatch.setenv("PASSHAT_WORKSPACE_DIR", str(folders["ws"]))
    monkeypatch.setattr(tempfile, "tempdir", str(folders["tmp"]))
    return folders


def leftovers(folders: dict[str, Path], *, images: bool = False) -> list[str]:
    """Copies and commands' private folders left behind (and the images' master copies if ``images``: a
    domain keeps those while it is loaded, the process's exit removes them)."""
    gc.collect()  # a copy nobody holds is removed by its finalizer
    kinds = ("passhat-ws-", "passhat-cmd-", *(("passhat-image-",) if images else ()))
    inside = [p for folder in folders.values() for p in folder.iterdir()]
    inside += [q for p in list(inside) if p.name.startswith("passhat-copies-") for q in p.iterdir()]  # the run's parent
    return sorted(p.name for p in inside if p.name.startswith(kinds))


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (not counting this one)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def records(run: Any) -> list[Any]:
    return sorted(run.records(), key=lambda r: (r.case_id, r.trial))


def grade(record: Any, prefix: str) -> Grade:
    return next(g for g in record.grades if g.name.startswith(prefix))


# --- the file tools against a hostile agent ----------------------------------------------------------


class Tools:
    """The file tools of one world, called through the tool boundary as an agent's calls are."""

    def __init__(self, domain: Domain) -> None:
        self.world = domain.restore("default", 0)
        self.root = self.world.workspace.root  # type: ignore[union-attr]
        self.boundary = ToolBoundary(domain.tool_list(), ToolContext(self.world))

    def __call__(self, tool: str, **arguments: Any) -> ToolCall:
        return asyncio.run(self.boundary.call(tool, arguments))


@pytest.fixture
def tools(tmp_path: Path, isolated: dict[str, Path]) -> Iterator[Tools]:
    make_suite(tmp_path / "suite", {})
    t = Tools(load_domain(str(tmp_path / "suite" / "domain.py")))
    yield t
    t.world.close()


def test_write_file_onto_a_fifo_is_refused_instead_of_hanging_the_run(tools: Tools) -> None:
    """The tools run on the event loop every trial shares: an open() that waits for a FIFO's reader would
    stop every trial of the run, time limits included."""
    assert tools("run_command", command="mkfifo pipe && ln -s pipe to_pipe").ok
    answers: list[ToolCall] = []
    worker = threading.Thread(target=lambda: answers.extend(tools("write_file", path=p, content="x")
                                                            for p in ("pipe", "to_pipe")), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():  # release the blocked open before failing
        os.close(os.open(tools.root / "pipe", os.O_RDONLY | os.O_NONBLOCK))
        pytest.fail("write_file blocked on a FIFO")
    assert [a.status for a in answers] == ["tool_error", "tool_error"]
    assert all("not a regular file" in (a.error or "") for a in answers)
    assert tools("read_file", path="pipe").status == "tool_error"
    assert [m["path"] for m in tools("search", text="def mean").result["matches"]] == ["calc.py"]
    assert tools("delete_file", path="pipe").ok and not os.path.lexists(tools.root / "pipe")


def test_delete_file_removes_a_link_not_what_it_points_to(tools: Tools) -> None:
    assert tools("run_command", command="ln -s calc.py to_file && ln -s tests to_dir && ln -s /etc to_etc").ok
    for link in ("to_file", "to_dir", "to_etc"):
        call = tools("delete_file", path=link)
        assert call.ok and call.result == {"path": link, "deleted": True}, call.error
        assert not os.path.lexists(tools.root / link)
    assert (tools.root / "calc.py").is_file() and (tools.root / "tests" / "test_calc.py").is_file()
    assert tools.world.workspace.diff().paths() == []  # type: ignore[union-attr]


def test_paths_out_of_the_copy_are_refused_by_every_tool(tools: Tools) -> None:
    image = tools.world.workspace.image.path  # type: ignore[union-attr]
    assert tools("run_command", command=f"ln -s /etc/passwd pw && ln -s /etc etc && ln -s {image}/calc.py master").ok
    attempts = [("read_file", {"path": "pw"}), ("write_file", {"path": "pw", "content": "x"}),
                ("search", {"text": "root", "path": "pw"}), ("list_dir", {"path": "etc"}),
                ("write_file", {"path": "etc/x", "content": "x"}), ("read_file", {"path": "master"}),
                ("write_file", {"path": "master", "content": "x"}), ("delete_file", {"path": "tests/../.."}),
                ("delete_file", {"path": "etc/passwd"}), ("write_file", {"path": "a\x00b", "content": "x"})]
    for tool, arguments in attempts:
        call = tools(tool, **arguments)
        assert call.status == "tool_error", (tool, arguments, call.status, call.error)
    assert tools("search", text="root:").result == {"matches": [], "truncated": False}  # links are not followed
    assert (image / "calc.py").read_text() == REPO["calc.py"]


def test_bad_writes_are_tool_errors_the_agent_can_read(tools: Tools) -> None:
    """Not ``exception`` (a tool bug, with a traceback): the agent asked for something impossible."""
    cases = {("\ud800", "x.txt"): "content: not valid text", ("x", "LICENSE/inner.txt"): "LICENSE/inner.txt: cannot write",
             ("x", "tests"): "tests: is a directory",
             ("x" * (file_tools.MAX_WRITE + 1), "big.txt"): "is more than the 1048576"}
    for (content, path), says in cases.items():
        call = tools("write_file", path=path, content=content)
        assert call.status == "tool_error" and says in (call.error or ""), (path, call.status, call.error)
    assert tools("write_file", path="exact.txt", content="x" * file_tools.MAX_WRITE).ok
    assert tools.world.workspace.diff().paths() == ["exact.txt"]  # type: ignore[union-attr]


@pytest.mark.parametrize("timeout, status", [(0, "tool_error"), (-1, "tool_error"), (601, "tool_error"),
                                             (float("nan"), "invalid_arguments"), ("5", "invalid_arguments")])
def test_run_command_refuses_a_time_limit_out_of_range(tools: Tools, timeout: Any, status: str) -> None:
    call = tools("run_command", command="touch ran", timeout=timeout)
    assert call.status == status
    assert not (tools.root / "ran").exists()


def test_command_output_that_is_not_utf8_is_replaced_not_fatal(tools: Tools) -> None:
    call = tools("run_command", command=r"printf 'ok \377\376 end'; printf '\377' >&2")
    assert call.ok and call.result["stdout"] == "ok \ufffd\ufffd end" and call.result["stderr"] == "\ufffd"


def test_search_skips_huge_files_and_stops_at_its_byte_budget(tools: Tools, monkeypatch: pytest.MonkeyPatch) -> None:
    (tools.root / "one_line.txt").write_text("needle " * (10 * 1024 * 1024 // 7))  # 10 MB on one line
    for i in range(5):
        (tools.root / f"part{i}.txt").write_text("needle\n" + "x" * 1000)
    found = tools("search", text="needle").result
    assert found["truncated"] is False and sorted(m["path"] for m in found["matches"]) == [f"part{i}.txt" for i in range(5)]
    monkeypatch.setattr(file_tools, "MAX_SEARCHED_TOTAL", 2500)
    cut = tools("search", text="needle").result
    assert cut["truncated"] is True and len(cut["matches"]) == 2 and "search a narrower path" in cut["note"]


@needs_unshare
def test_a_daemon_the_command_starts_is_gone_when_it_returns(tools: Tools) -> None:
    marker = f"passhat-daemon-{uuid.uuid4().hex}"
    sleeper = f"{sys.executable} -c 'import time; time.sleep(1000)' {marker}"
    call = tools("run_command", command=f"setsid {sleeper} > /dev/null 2>&1 & (nohup {sleeper} &) ; echo started")
    assert call.ok and call.result["stdout"] == "started\n"
    assert processes_with(marker) == []


# --- a run cut short -------------------------------------------------------------------------------------

SLEEPER_AGENTS = """\
import os

async def sleeper(episode):
    if os.environ.get("SLEEP_MARK"):  # the first run: a test run that never ends, until the run is stopped
        command = f"touch started; python -c 'import time; time.sleep(300)' {os.environ['SLEEP_MARK']}"
        await episode.call("run_command", {"command": command, "timeout": 600})
    return "done"
"""
UNCHANGED = """\
assertions:
  - file_unchanged: {paths: [tests]}
"""


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_run_stopped_mid_command_leaves_no_copy_or_process_and_resume_finishes(
        tmp_path: Path, isolated: dict[str, Path], stop: signal.Signals) -> None:
    """Ctrl-C, and SIGTERM (CI cancelling a job, ``timeout``, ``docker stop``), while every trial's command
    runs: each trial is cancelled and cleans up, nothing is recorded as a verdict, ``--resume`` finishes."""
    cases = make_suite(tmp_path / "suite", {"a": UNCHANGED, "b": UNCHANGED})
    (tmp_path / "suite" / "agents.py").write_text(SLEEPER_AGENTS)
    marker = f"passhat-sleep-{uuid.uuid4().hex}"
    env = {**os.environ, "PYTHONPATH": str(SRC), "PASSHAT_WORKSPACE_DIR": str(isolated["ws"]),
           "TMPDIR": str(isolated["tmp"]), "SLEEP_MARK": marker}
    argv = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from passhat.cli import main; sys.argv[0] = 'passhat'; main()",
            "run", str(cases), "--agent", f"{tmp_path / 'suite' / 'agents.py'}:sleeper", "-k", "2", "-j", "4",
            "--out", str(tmp_path / "run"), "--no-sanity", "-q"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            if len(list(isolated["ws"].glob("*/*/started"))) == 4 and len(processes_with(marker)) >= 4:
                break
            assert proc.poll() is None, proc.communicate()
            threading.Event().wait(0.1)
        else:
            pytest.fail("the four trials' commands did not start")
        proc.send_signal(stop)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert "never retrieved" not in stderr and "Traceback" not in stderr, stderr
    assert leftovers(isolated, images=True) == [] and processes_with(marker) == []
    assert (tmp_path / "run" / "trials.jsonl").read_text() == ""  # nothing half-done was recorded as a verdict
    del env["SLEEP_MARK"]
    done = subprocess.run([*argv[:-1], "--resume", "-q"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    run = passhat.Run.open(tmp_path / "run")
    assert [(r.case_id, r.trial, r.outcome) for r in records(run)] == [
        ("a", 0, "pass"), ("a", 1, "pass"), ("b", 0, "pass"), ("b", 1, "pass")]
    assert leftovers(isolated, images=True) == []


def test_a_time_limit_during_a_command_kills_it_and_discards_the_copy(
        tmp_path: Path, isolated: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    cases = make_suite(tmp_path / "suite", {"slow": UNCHANGED + "limits: {max_seconds: 1}\n"})
    marker = f"passhat-limit-{uuid.uuid4().hex}"

    async def hangs(episode: Episode) -> str:
        await episode.call("run_command", {"command": f"python -c 'import time; time.sleep(300)' {marker}",
                                           "timeout": 600})
        return "done"

    run = passhat.evaluate(str(cases), hangs, name="hangs", trials=2, out=tmp_path / "run", sanity=False)
    assert [(r.outcome, r.end_reason) for r in records(run)] == [("fail", "time_limit")] * 2
    assert processes_with(marker) == [] and leftovers(isolated) == []
    gc.collect()
    assert "never retrieved" not in caplog.text


def test_a_trial_cancelled_while_its_copy_is_made_leaves_no_copy(tmp_path: Path, isolated: dict[str, Path],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy is made in a thread (``asyncio.to_thread``), which a cancellation does not stop: the copy it
    finishes after its trial is gone must not stay in memory (``/dev/shm``) or on disk."""
    suite = load_suite(str(make_suite(tmp_path / "suite", {"a": UNCHANGED})))
    case, domain = suite.cases[0], suite.domain_of(suite.cases[0])
    entered, release = threading.Event(), threading.Event()
    made = domain.copy_workspace

    def slow_copy(fixture: str) -> Any:
        entered.set()
        release.wait(30)
        return made(fixture)

    monkeypatch.setattr(domain, "copy_workspace", slow_copy)

    async def agent(episode: Episode) -> str:
        return "done"

    async def scenario() -> None:
        trial = asyncio.ensure_future(run_trial(case, domain, agent, 0, 1))
        while not entered.is_set():
            await asyncio.sleep(0.01)
        trial.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await trial

    asyncio.run(scenario())  # returns once the copying thread is done: asyncio.run waits for its executor
    assert leftovers({"ws": isolated["ws"]}) == []


@needs_unshare
def test_a_harness_killed_outright_leaves_no_command_running(tmp_path: Path) -> None:
    """SIGKILL (or the OOM killer) gives the harness no chance to clean up; its commands must still die
    with it rather than run on, re-parented to init, until their own time limit."""
    marker = f"passhat-orphan-{uuid.uuid4().hex}"
    (tmp_path / "tree").mkdir()
    script = textwrap.dedent(f"""
        import asyncio, os, signal, sys
        from pathlib import Path
        from passhat.workspace import run_command

        async def main():
            command = "touch started; python -c 'import time; time.sleep(300)' {marker}"
            task = asyncio.ensure_future(run_command(Path(sys.argv[1]), command, timeout_s=600))
            while not os.path.exists(os.path.join(sys.argv[1], "started")):
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            os.kill(os.getpid(), signal.SIGKILL)

        asyncio.run(main())
    """)
    (tmp_path / "tmp").mkdir()  # the command's private folder: a harness killed outright cannot remove it
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "tree")],
                          env={**os.environ, "PYTHONPATH": str(SRC), "TMPDIR": str(tmp_path / "tmp")},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    for _ in range(100):  # the kernel delivers the death signals at once; their exits take a moment
        if not processes_with(marker):
            break
        threading.Event().wait(0.05)
    left = processes_with(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_a_domain_can_remove_its_images_before_its_process_is_killed(tmp_path: Path, isolated: dict[str, Path]) -> None:
    """A Ray worker is killed at the end of a run, so no exit handler removes the images it built: it calls
    ``close_workspaces`` first (``TrialWorker.close``). The domain stays usable: the next trial rebuilds."""
    make_suite(tmp_path / "suite", {})
    domain = load_domain(str(tmp_path / "suite" / "domain.py"))
    first = domain.workspace_image("default")
    assert first is not None and leftovers(isolated, images=True) == [first.path.parent.name]
    domain.close_workspaces()
    assert first.closed and leftovers(isolated, images=True) == []
    with domain.copy_workspace("default") as copy:  # type: ignore[union-attr]
        assert (copy.root / "calc.py").read_text() == REPO["calc.py"]
    domain.close_workspaces()
    assert leftovers(isolated, images=True) == []


# --- concurrent trials cannot see each other -------------------------------------------------------------


@needs_unshare
def test_eight_concurrent_trials_see_only_their_own_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Copies in their default place (``/dev/shm`` where there is one): every trial writes a token and, while
    the others run, tries to read every sibling's through its command; each must find only its own."""
    monkeypatch.delenv("PASSHAT_WORKSPACE_DIR", raising=False)
    cases = make_suite(tmp_path / "suite", {"peek": UNCHANGED})
    tmp = tempfile.gettempdir()

    async def peeker(episode: Episode) -> str:
        token = f"token-{episode.seed}"
        await episode.call("write_file", {"path": "mine.txt", "content": token + "\n"})
        found = await episode.call("run_command", {
            "command": f"sleep 0.5; cat /dev/shm/*/mine.txt /dev/shm/*/*/mine.txt {tmp}/*/mine.txt {tmp}/*/*/mine.txt "
                       f"{tmp}/*/tree/mine.txt 2>/dev/null; "
                       "ls /dev/shm"})
        return f"{token}|{found.content['stdout']}"

    run = passhat.evaluate(str(cases), peeker, name="peeker", trials=8, concurrency=8, out=tmp_path / "run",
                           sanity=False)
    replies = [r.reply for r in records(run)]
    assert len({reply.split("|")[0] for reply in replies}) == 8
    for reply in replies:
        token, seen = reply.split("|", 1)
        assert [w for w in seen.split() if w.startswith("token-")] == [token], seen
        assert len([w for w in seen.split() if w.startswith("passhat-")]) == 1, seen  # its own copy only


@needs_unshare
def test_copies_in_dev_shm_leave_the_command_a_private_writable_dev_shm(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The default place of copies is ``/dev/shm``; covering it read-only to hide the siblings broke anything
    that needs shared memory there (``multiprocessing`` locks and queues, so pytest-xdist)."""
    monkeypatch.delenv("PASSHAT_WORKSPACE_DIR", raising=False)
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm on this machine")
    make_suite(tmp_path / "suite", {})
    t = Tools(load_domain(str(tmp_path / "suite" / "domain.py")))
    try:
        assert t.root.parent.parent == Path("/dev/shm")  # in the run's private folder there
        probe = f"passhat-probe-{uuid.uuid4().hex}"
        call = t("run_command", command=f"python -c 'import multiprocessing as m; m.Lock(); print(\"locked\")' && "
                                        f"touch /dev/shm/{probe} && ls /dev/shm")
        assert call.ok and call.result["exit_code"] == 0, call.result
        assert call.result["stdout"].split() == ["locked", *sorted([t.root.parent.name, probe])]
        assert not Path("/dev/shm", probe).exists()  # the command's own /dev/shm, not the machine's
    finally:
        t.world.close()


@needs_unshare
def test_copies_in_a_folder_inside_the_temporary_folder_can_run_commands(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``PASSHAT_WORKSPACE_DIR=/tmp/ws``: the copy's folder is inside the one holding the command's private
    HOME. Covering both failed the sandbox's set-up, and every command "exited 1" with its traceback."""
    monkeypatch.setenv("PASSHAT_WORKSPACE_DIR", str(tmp_path / "ws"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "sibling.txt").write_text("hidden")
    make_suite(tmp_path / "suite", {})
    t = Tools(load_domain(str(tmp_path / "suite" / "domain.py")))
    try:
        call = t("run_command", command="echo ran > out.txt; ls ..; cat ../sibling.txt; ls $HOME/..")
        assert call.ok and (t.root / "out.txt").read_text() == "ran\n", call.result
        assert "hidden" not in call.result["stdout"] and "suite" not in call.result["stdout"]
    finally:
        t.world.close()


# --- what a run records, and re-grading from it ---------------------------------------------------------


def regraded(run: Any, cases: Path, out: Path) -> list[Any]:
    regrade_run(run.folder, out, load_suite(str(cases)))
    return records(passhat.Run.open(out))


@pytest.mark.parametrize("command, path, cause", [
    ("head -c 3000 /dev/urandom > data.bin", "data.bin", "its new content was not kept (binary"),
    ("python -c \"print('y' * 300000)\" > big.txt", "big.txt", "its new content was not kept"),
    ("echo 'mail alice@example.com' > notes.txt", "notes.txt", "redaction changed it"),
], ids=["binary", "over-budget", "redacted"])
def test_a_change_the_record_cannot_rebuild_makes_the_regrade_an_error_naming_it(
        tmp_path: Path, isolated: dict[str, Path], command: str, path: str, cause: str) -> None:
    cases = make_suite(tmp_path / "suite", {"a": UNCHANGED})

    async def agent(episode: Episode) -> str:
        await episode.call("run_command", {"command": command})
        return "done"

    run = passhat.evaluate(str(cases), agent, name="agent", trials=1, out=tmp_path / "run", sanity=False)
    [record] = records(run)
    assert record.outcome == "pass" and [c["path"] for c in record.files["changes"]] == [path]
    [again] = regraded(run, cases, tmp_path / "regraded")
    assert again.outcome == "error"
    assert f"cannot re-apply the change to {path!r}" in again.error and cause in again.error, again.error
    assert "fixture or schema changed" not in again.error  # the fixture did not change: do not say it did
    assert leftovers(isolated) == []


def test_file_hashes_survive_redaction() -> None:
    """3 in 10,000 SHA-256 digests start with digits a card or phone pattern takes; a redacted hash no
    longer matches its file, and the trial could not be re-graded."""
    digest = "6454809337740619da6006addbaea13aa2ba572425885aa413ca77002d00e2bf"  # 16 digits, Luhn-valid
    change = {"path": "a.txt", "kind": "modified", "before": digest, "after": "1437624741" + "0" * 54}
    assert Redactor().value({"files": {"changes": [change]}}) == {"files": {"changes": [change]}}
    assert Redactor().text(f"card {digest[:16]}") == "card [REDACTED:card]"  # the number alone still is one


def test_mode_changes_folders_and_empty_folders_regrade_to_the_same_verdicts(tmp_path: Path,
                                                                             isolated: dict[str, Path]) -> None:
    """An executable bit, a file replaced by a folder and a new empty folder: the record rebuilds the first
    two, and an empty folder is no change at all, so no assertion may tell it apart."""
    cases = make_suite(tmp_path / "suite", {"a": """\
        assertions:
          - command_succeeds: {run: "test -x calc.py && test -f LICENSE/inner && ./run.sh"}
          - file_absent: {path: build}
          - file_exists: {path: LICENSE/inner}
          - file_unchanged: {paths: [tests]}
    """})

    async def agent(episode: Episode) -> str:
        await episode.call("run_command", {"command": "chmod +x calc.py && chmod -x run.sh && rm LICENSE && "
                                                      "mkdir -p LICENSE build/empty && echo z > LICENSE/inner"})
        await episode.call("run_command", {"command": "chmod +x run.sh"})  # and back: no change
        return "done"

    run = passhat.evaluate(str(cases), agent, name="agent", trials=1, out=tmp_path / "run", sanity=False)
    [record] = records(run)
    changes = {c["path"]: c for c in record.files["changes"]}
    assert {p: c["kind"] for p, c in changes.items()} == {"LICENSE": "removed", "LICENSE/inner": "added",
                                                          "calc.py": "modified"}
    assert changes["calc.py"]["executable"] and changes["calc.py"]["text_diff"].startswith("old mode 100644\nnew mode 100755")
    assert record.outcome == "pass", [(g.name, g.reason) for g in record.grades if not g.passed]
    assert "an empty directory is not part of the tree" in grade(record, "file_absent").reason
    [again] = regraded(run, cases, tmp_path / "regraded")
    assert [(g.name, g.passed) for g in again.grades] == [(g.name, g.passed) for g in record.grades]


def test_what_the_diff_leaves_out_cannot_decide_the_verdict(tmp_path: Path, isolated: dict[str, Path]) -> None:
    """A fixed module compiled into ``__pycache__`` as an unchecked-hash .pyc, its source put back as it was:
    the diff (which leaves caches out) is empty, yet Python would run the fix. And a test file the agent
    made unreadable: not in the diff either (only the executable bit is part of a tree). The case's
    commands must run on the tree the diff describes, as a re-grade does."""
    repo = {**REPO, "calc.py": "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n"}
    cases = make_suite(tmp_path / "suite", {"a": """\
        assertions:
          - command_succeeds: {run: "python -m pytest -q -p no:cacheprovider tests/test_calc.py"}
    """}, repo=repo)
    plant = ("cp calc.py $TMPDIR/bug.py && printf 'def mean(xs):\\n    return sum(xs) / len(xs)\\n' > calc.py && "
             "python -c \"import py_compile as c; c.compile('calc.py', cfile='__pycache__/calc.cpython-%d%d.pyc' % "
             "__import__('sys').version_info[:2], invalidation_mode=c.PycInvalidationMode.UNCHECKED_HASH)\" && "
             "cp $TMPDIR/bug.py calc.py && python -m pytest -q -p no:cacheprovider tests/test_calc.py")

    async def cheat(episode: Episode) -> str:
        planted = await episode.call("run_command", {"command": plant})
        assert planted.content["exit_code"] == 0, planted.content  # the trick works on the agent's side
        return "fixed"

    [record] = records(passhat.evaluate(str(cases), cheat, name="cheat", trials=1, out=tmp_path / "run", sanity=False))
    assert record.files == {"changes": []}
    assert record.outcome == "fail" and "expected 0" in grade(record, "command_succeeds").reason

    async def locks(episode: Episode) -> str:
        await episode.call("write_file", {"path": "calc.py", "content": REPO["calc.py"]})
        await episode.call("run_command", {"command": "chmod 000 tests/test_calc.py"})
        return "fixed"

    [record] = records(passhat.evaluate(str(cases), locks, name="locks", trials=1, out=tmp_path / "run2", sanity=False))
    assert record.outcome == "pass", grade(record, "command_succeeds").reason
    [again] = regraded(passhat.Run.open(tmp_path / "run2"), cases, tmp_path / "regraded")
    assert again.outcome == "pass"


def test_line_diffs_have_a_budget_per_trial(tmp_path: Path, isolated: dict[str, Path],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of written files must not make a record of gigabytes: after the budget, a one-line note."""
    monkeypatch.setattr(copies, "MAX_TEXT_DIFFS", 2000)
    cases = make_suite(tmp_path / "suite", {"a": UNCHANGED})

    async def agent(episode: Episode) -> str:
        await episode.call("run_command", {"command": "for i in 1 2 3 4 5 6; do seq 1 100 > f$i.txt; done"})
        return "done"

    [record] = records(passhat.evaluate(str(cases), agent, name="agent", trials=1, out=tmp_path / "run", sanity=False))
    diffs = [c["text_diff"] for c in record.files["changes"]]
    assert len(diffs) == 6 and sum(len(d) for d in diffs) < 2000 + 6 * 200
    assert "+100\n" in diffs[0] and "budget for this trial's line diffs is used up" in diffs[-1]
    assert all(c["content_kept"] for c in record.files["changes"])  # the contents, within theirs, are kept


def test_regrade_of_a_bugfix_run_reproduces_every_verdict(tmp_path: Path, builtin_run: Any) -> None:
    """The commands run again on the rebuilt tree and every grade comes out the same."""
    run = passhat.Run.open(builtin_run("bugfix", "hasty", 1))  # shared: read only, regraded into tmp_path
    first = records(run)
    regrade_run(run.folder, tmp_path / "regraded", load_suite("bugfix"))
    again = records(passhat.Run.open(tmp_path / "regraded"))
    assert {r.outcome for r in first} == {"pass", "fail"}
    assert [(r.case_id, r.outcome, [(g.name, g.passed) for g in r.grades]) for r in again] == \
        [(r.case_id, r.outcome, [(g.name, g.passed) for g in r.grades]) for r in first]


# --- workspace assertions ------------------------------------------------------------------------------


def test_protection_globs_and_the_scope_of_allowed_files(tmp_path: Path, isolated: dict[str, Path]) -> None:
    cases = make_suite(tmp_path / "suite", {"a": """\
        assertions:
          - file_unchanged: {paths: ["**/conftest.py"], description: conftests}
          - file_unchanged: {paths: [tests], description: tests}
          - file_unchanged: {paths: ["src/*.py"], description: top-level sources}
          - file_unchanged: {paths: [LICENSE, "src/pkg/*.txt"], description: untouched}
          - unchanged_except: {files: [calc.py, "src/**"], description: scope}
          - command_succeeds: {run: "exit 1", exit_code: 1, description: exit one}
          - command_succeeds: {run: "sleep 5", timeout: 0.5, description: slow}
    """})

    async def agent(episode: Episode) -> str:
        await episode.call("write_file", {"path": "src/pkg/conftest.py", "content": "import pytest\n"})
        await episode.call("write_file", {"path": "src/pkg/mod.py", "content": "X = 2\n"})
        await episode.call("write_file", {"path": "calc.py", "content": "# fixed\n"})
        await episode.call("write_file", {"path": "notes/todo.md", "content": "later\n"})
        return "done"

    [record] = records(passhat.evaluate(str(cases), agent, name="agent", trials=1, out=tmp_path / "run",
                                        sanity=False))
    verdicts = {g.name.split(": ", 1)[1]: (g.passed, g.reason) for g in record.grades if ": " in g.name}
    assert verdicts["conftests"] == (False, "1 protected file(s) changed: src/pkg/conftest.py (added)")
    assert verdicts["tests"][0] and verdicts["untouched"][0]
    assert verdicts["top-level sources"][0]  # `*` stays in its segment: src/pkg/mod.py is not src/*.py
    assert verdicts["scope"] == (False, "1 change(s) outside the allowed scope: notes/todo.md (added)")
    assert verdicts["exit one"][0]
    assert verdicts["slow"] == (False, "`sleep 5` did not finish within 0.5s")
    assert record.failure is not None and record.failure.category == "side_effect_outside_scope"
    assert record.failure.step == 1  # the write that added the protected conftest, not the first write


def test_file_assertions_on_what_an_agent_made_fail_closed_instead_of_erroring(
        tmp_path: Path, isolated: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Links in and out, a dangling link, a binary file, a file too large to read into the harness."""
    monkeypatch.setattr(file_assertions, "MAX_MATCHED_FILE", 1000)
    cases = make_suite(tmp_path / "suite", {"a": """\
        assertions:
          - file_exists: {path: inner_link, description: link inside}
          - file_matches: {path: outer_link, pattern: root, description: link outside}
          - file_absent: {path: dangling, description: dangling link}
          - file_matches: {path: blob.bin, pattern: "^PNG", description: binary}
          - file_matches: {path: huge.txt, pattern: "x", description: huge}
    """})

    async def agent(episode: Episode) -> str:
        await episode.call("run_command", {"command": "ln -s calc.py inner_link && ln -s /etc/passwd outer_link && "
                                                      "ln -s nowhere dangling && printf 'PNG\\000\\377' > blob.bin && "
                                                      "head -c 1001 /dev/zero | tr '\\0' x > huge.txt"})
        return "done"

    [record] = records(passhat.evaluate(str(cases), agent, name="agent", trials=1, out=tmp_path / "run",
                                        sanity=False))
    assert record.outcome == "fail"  # not error: the agent's doing, graded
    verdicts = {g.name.split(": ", 1)[1]: (g.passed, g.reason) for g in record.grades if ": " in g.name}
    assert verdicts["link inside"][0]
    assert verdicts["link outside"][0] is False and "outside the workspace" in verdicts["link outside"][1]
    assert verdicts["dangling link"] == (False, "dangling: expected nothing there, found a symbolic link")
    assert verdicts["binary"][0]
    assert verdicts["huge"] == (False, "huge.txt: 1,001 bytes, over the 1,000 bytes file_matches reads")


@pytest.mark.parametrize("calls, step", [
    ([("write_file", {"path": "x.py", "content": "1\n"}), ("write_file", {"path": "tests/test_x.py", "content": "2\n"})], 2),
    ([("write_file", {"path": "calc.py", "content": "1\n"}), ("delete_file", {"path": "./tests"})], 2),
    ([("write_file", {"path": "calc.py", "content": "1\n"}), ("run_command", {"command": "rm -r tests"})], 1),
])
def test_a_protection_failure_names_the_write_that_touched_the_file(calls: list[tuple[str, dict[str, Any]]],
                                                                    step: int) -> None:
    """The reason lists whole paths: a write to ``x.py`` did not touch ``tests/test_x.py``. A change no
    file tool names (a command did it) falls back to the first write."""
    case = load_suite(str(Path(__file__).parents[1] / "data" / "calc" / "cases")).cases[0]
    made = [ToolCall(step=i, tool=tool, arguments=arguments, status="ok", kind="write", committed=True)
            for i, (tool, arguments) in enumerate(calls, start=1)]
    reason = "2 protected file(s) changed: tests/test_calc.py (removed), tests/test_x.py (added)"
    failure = attribute(case, "fail", [Grade(grader="state", name="file_unchanged(tests)", passed=False, reason=reason)],
                        made, [], "completed", None)
    assert failure is not None and failure.category == "side_effect_outside_scope" and failure.step == step


# --- what the suite hash covers ---------------------------------------------------------------------


def test_the_domain_hash_covers_command_env_the_idempotent_flag_and_executable_bits(tmp_path: Path) -> None:
    """Each decides a verdict: the environment of the case's commands, whether a repeated write counts as a
    duplicate (attribution), and whether ``./run.sh`` can run."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "run.sh").write_text("#!/bin/sh\n")

    def digest(tools: Any = file_tools.WORKSPACE_TOOLS, **kw: Any) -> str:
        return Domain("d", workspace=tmp_path / "repo", policy="p", tools=tools, **kw).content_hash()

    base = digest()
    assert digest(command_env={"A": "1"}) not in (base, digest(command_env={"A": "2"}))
    plain = [dataclasses.replace(t, idempotent=False) if t.name == "run_command" else t for t in file_tools.WORKSPACE_TOOLS]
    assert digest(tools=plain) != base
    os.chmod(tmp_path / "repo" / "run.sh", 0o755)
    assert digest() != base


# --- fixtures from git -----------------------------------------------------------------------------------


def test_a_git_fixture_is_the_named_commit_and_the_hash_follows_it(tmp_path: Path, isolated: dict[str, Path]) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "upstream"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for version in ("one", "two"):
        (repo / "version.txt").write_text(version + "\n")
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", version], check=True)
    domain = DOMAIN_PY.replace('workspace=Path(__file__).parent / "repo"',
                               f'workspace={{"default": GitTree(Path({str(repo)!r}), "HEAD~1")}}')
    domain = domain.replace("from passhat.domain import Domain", "from passhat.domain import Domain, GitTree")
    cases = make_suite(tmp_path / "old", {"a": "assertions:\n  - file_matches: {path: version.txt, pattern: one}\n"},
                       repo={}, domain=domain)
    make_suite(tmp_path / "new", {"a": "assertions:\n  - file_matches: {path: version.txt, pattern: one}\n"},
               repo={}, domain=domain.replace('"HEAD~1"', '"HEAD"'))

    async def reader(episode: Episode) -> str:
        return (await episode.call("read_file", {"path": "version.txt"})).content["content"]

    [record] = records(passhat.evaluate(str(cases), reader, name="reader", trials=1, out=tmp_path / "run",
                                        sanity=False))
    assert record.reply == "one\n" and record.outcome == "pass"
    old, new = load_suite(str(cases)), load_suite(str(tmp_path / "new" / "cases"))
    assert old.fixture_hashes() != new.fixture_hashes() and old.content_hash() != new.content_hash()


def test_a_hard_exit_removes_the_runs_workspace_copies(tmp_path: Path) -> None:
    """A stop that cannot wait (a second Ctrl-C, the loop watchdog's abort) ends through ``hard_exit``, which
    skips every trial's own clean-up: the copies' folder goes with it, not left in RAM-backed /dev/shm."""
    import subprocess
    import sys

    program = ("from passhat import shutdown\nfrom passhat.worlds.workspace_source import copy_folder\n"
               "copy = copy_folder(10) / 'trial-0'\ncopy.mkdir()\n(copy / 'main.py').write_text('x')\n"
               "shutdown.hard_exit('stopping')\n")
    done = subprocess.run([sys.executable, "-c", program], env={**os.environ, "PASSHAT_WORKSPACE_DIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and "stopping; stopped without waiting further" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_empty_copy_folders_a_killed_process_left_are_swept_at_the_next_start(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL skips atexit: the next process's first copy folder removes the empty ones an hour old, and only those."""
    from passhat.worlds import workspace_source

    old_empty, old_full, new_empty = (tmp_path / f"passhat-copies-{name}" for name in ("old", "full", "new"))
    for folder in (old_empty, old_full, new_empty):
        folder.mkdir()
    (old_full / "ws-1").mkdir()  # a copy in it: not ours to judge
    for folder in (old_empty, old_full):
        os.utime(folder, (time.time() - 2 * workspace_source.STALE_S,) * 2)
    monkeypatch.setattr(workspace_source, "_parents", {})
    made = workspace_source._private_parent(tmp_path)
    assert not old_empty.exists() and old_full.is_dir() and new_empty.is_dir()
    assert made.is_dir() and made.name.startswith("passhat-copies-")
    made.rmdir()
