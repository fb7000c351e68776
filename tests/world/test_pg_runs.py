"""Runs on PostgreSQL worlds: concurrent trials never see each other, a killed run leaves no database
behind once resumed, and a throwaway cluster dies with the process that started it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import passhat
from passhat.seeding import derive_seed
from tests.data.pg_markers.agent import account_of, marker

DATA = Path(__file__).resolve().parents[1] / "data" / "pg_markers"
SRC = Path(passhat.__file__).resolve().parents[1]


def others_databases(pg: Any) -> list[str]:
    """passhat's databases on the server made by other processes than this one (``passhat_<session>_…``)."""
    with pg.connect() as conn:
        names = [r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'passhat\\_%'")]
    return sorted(n for n in names if not n.startswith(f"passhat_{pg.session}_"))


def own_marker_only(record: Any) -> bool:
    """The trial's diff is exactly its own changes: its marker, its one debit."""
    seed = derive_seed("agent", record.seed)
    markers, accounts = record.diff.get("markers", []), record.diff.get("accounts", [])
    return ([m["after"]["label"] for m in markers] == [f"m-{seed}"]
            and [(a["key"], a["after"]["balance"]) for a in accounts] == [([account_of(seed)], 99)]
            and set(record.diff) == {"markers", "accounts"})


def test_sixteen_concurrent_trials_see_only_their_own_database(pg: Any, tmp_path: Path) -> None:
    run = passhat.evaluate(DATA / "cases", marker, name="marker", trials=16, concurrency=16, out=tmp_path / "run",
                           sanity=False)
    records = list(run.records())
    assert len(records) == 32 and {(r.case_id, r.trial) for r in records} == {(c, t) for c in ("mark", "mark-again")
                                                                              for t in range(16)}
    assert [r for r in records if r.outcome != "pass"] == []
    assert [r.seed for r in records if not own_marker_only(r)] == []
    assert all(r.calls[0].result == {"markers_seen": 1} for r in records)  # a tool saw one marker: its own


def pg_url(pg: Any) -> str:
    """The admin URL of the test's server, for a passhat process of its own."""
    from passhat.worlds.postgres.cluster import ADMIN

    return pg.url("postgres", str(pg.params.get("user") or ADMIN), str(pg.params.get("password") or ""))


def run_cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "passhat", "run", str(DATA / "cases"), *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def test_a_run_killed_outright_resumes_with_nothing_lost_doubled_or_left_behind(pg: Any, tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{DATA.parents[2]}"}
    env.pop("PASSHAT_PG_URL", None)
    args = ["--agent", f"{DATA / 'agent.py'}:slow_marker", "-k", "6", "-j", "4", "--out", str(out),
            "--no-sanity", "--no-report", "-q", "--pg-url", pg_url(pg)]
    before = set(others_databases(pg))  # empty, unless another process shares this server
    first = run_cli(*args, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and first.poll() is None:
        done = (out / "trials.jsonl").read_text().count("\n") if (out / "trials.jsonl").exists() else 0
        if done >= 3:
            break
        time.sleep(0.05)
    assert first.poll() is None, first.communicate()[0]
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert set(others_databases(pg)) - before, "the killed run had databases in use (else this proves nothing)"

    second = run_cli(*args, "--resume", env=env)
    output, _ = second.communicate(timeout=300)
    assert second.returncode == 0, output
    lines = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    keys = [(r["case_id"], r["trial"]) for r in lines]
    assert sorted(keys) == sorted({(c, t) for c in ("mark", "mark-again") for t in range(6)})  # none lost or doubled
    assert all(r["outcome"] == "pass" for r in lines)
    assert set(others_databases(pg)) - before == set()  # the killed run's and the resumed run's: all gone


def test_a_throwaway_cluster_stops_and_is_deleted_when_its_process_is_killed(tmp_path: Path) -> None:
    """In the folder PASSHAT_PG_DIR names (one the cluster's unprivileged user can enter, as root)."""
    parent = tempfile.mkdtemp(prefix="passhat-pgdir-")
    os.chmod(parent, 0o755)
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path[:0] = [{str(SRC)!r}, {str(DATA.parents[2])!r}]
        from passhat.worlds.postgres import server
        s = server.current()
        print(s.cluster.root, s.cluster.keeper.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = {**{k: v for k, v in os.environ.items() if k != "PASSHAT_PG_URL"}, "PASSHAT_PG_DIR": parent}
    try:
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == -signal.SIGKILL, done.stderr
        root, _ = done.stdout.split()
        assert Path(root).parent == Path(parent)
        _gone_in_time(root)
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def _gone_in_time(root: str) -> None:

    def remains() -> list[str]:  # the folder, and any process of the cluster (postgres, the keeper)
        procs = [_cmdline(p) for p in Path("/proc").iterdir() if p.name.isdigit() and root in _cmdline(p)]
        return [root] * Path(root).exists() + procs

    deadline = time.monotonic() + 30
    while remains() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert remains() == [], "the cluster outlived the process that started it"


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
