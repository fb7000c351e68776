"""The Ray executor on a real local cluster (2 CPUs, so 2 worker processes): the same records and summary
as the local executor, a killed worker loses and duplicates nothing, a resumed run continues, bad input
is refused before any trial. One cluster for the module: starting Ray costs seconds."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import passhat
from passhat.errors import PasshatError
from passhat.runner import RunStore
from tests.runner.executor_cases import (
    VOLATILE,
    by_key,
    check_a_killed_worker_loses_and_duplicates_nothing,
    check_a_run_killed_locally_resumes,
    check_a_trial_whose_time_another_took_is_retried,
    check_a_worker_stuck_in_c_code_is_killed,
    check_loops_held_for_good_are_time_limit,
    deterministic,
    without,
)

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'passhat[ray]'): the Ray executor is untested")

SRC = Path(__file__).parents[2] / "src"
@pytest.fixture(scope="module")
def cluster() -> Any:
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


def test_without_drops_the_key_at_any_depth() -> None:
    assert without({"a": 1, "latency_s": 2, "b": [{"latency_s": 3, "c": 4}]}, ("latency_s",)) == {"a": 1, "b": [{"c": 4}]}


@pytest.mark.parametrize("agent", ["careful", "hasty", "flaky"])
def test_local_and_ray_give_the_same_summary_and_records(cluster: Any, tmp_path: Path, agent: str) -> None:
    local = passhat.evaluate("refunds", agent, trials=3, seed=11, concurrency=4, out=tmp_path / "local", sanity=False)
    distributed = passhat.evaluate("refunds", agent, trials=3, seed=11, concurrency=8, out=tmp_path / "ray",
                                   sanity=False, executor="ray")
    assert distributed.manifest.executor == {"kind": "ray", "address": "local", "workers": 2}
    assert local.manifest.executor == {"kind": "local"}
    ours, theirs = (json.loads((r.folder / "summary.json").read_text()) for r in (local, distributed))
    assert without(ours, VOLATILE) == without(theirs, VOLATILE)
    assert ours != without(ours, VOLATILE)  # the comparison above did leave latency out, and only that
    a, b = by_key(local.folder), by_key(distributed.folder)
    assert a.keys() == b.keys() and len(a) == 16 * 3
    assert {k: deterministic(r) for k, r in a.items()} == {k: deterministic(r) for k, r in b.items()}
    if agent == "flaky":  # the seeded lapses happened, identically: the comparison had something to compare
        assert {r.outcome for r in a.values()} == {"pass", "fail"}


def test_a_workspace_suite_gets_the_same_verdicts_on_ray(cluster: Any, tmp_path: Path, builtin_run: Any) -> None:
    """Each worker builds the fixtures' trees, copies them per trial and runs the commands in its sandbox:
    the same calls, file changes and grades as in this process (the session's local run: tests/conftest.py)."""
    local = passhat.Run.open(builtin_run("bugfix", "hasty", 1, 0))
    distributed = passhat.evaluate("bugfix", "hasty", trials=1, seed=0, concurrency=4, out=tmp_path / "ray",
                                   sanity=False, executor="ray")
    def verdict(record: Any) -> Any:  # pytest's output (in results, reasons, evidence) says how long it took: left out
        failure = record.failure and (record.failure.category, record.failure.step)
        return (record.outcome, record.end_reason, record.reply, record.files, [(c.tool, c.arguments, c.status)
                for c in record.calls], [(g.name, g.passed) for g in record.grades], failure)

    a, b = by_key(local.folder), by_key(distributed.folder)
    assert a.keys() == b.keys() and len(a) == 11
    assert {k: verdict(r) for k, r in a.items()} == {k: verdict(r) for k, r in b.items()}
    assert {r.outcome for r in a.values()} == {"pass", "fail"}


def test_the_cli_runs_trials_on_ray(cluster: Any, tmp_path: Path, cli: Any) -> None:
    r = cli("run", "refunds", "--agent", "careful", "-k", 2, "--executor", "ray", "-j", 6, "--out", tmp_path / "run",
            "-q", "--no-report", "--no-sanity", "--tag", "risk=high")
    assert r.exit_code == 0, r.output
    assert "careful: 11 of 11 cases passed all 2 trials; pass^2 1.00" in r.output
    assert RunStore(tmp_path / "run").manifest().executor == {"kind": "ray", "address": "local", "workers": 2}


def test_a_killed_worker_loses_and_duplicates_nothing(cluster: Any, tmp_path: Path) -> None:
    check_a_killed_worker_loses_and_duplicates_nothing(tmp_path, executor="ray")


def test_a_run_killed_under_one_executor_resumes_under_another(cluster: Any, tmp_path: Path) -> None:
    check_a_run_killed_locally_resumes(tmp_path, executor="ray")


def test_a_python_agent_is_shipped_to_the_workers(cluster: Any, tmp_path: Path) -> None:
    from passhat.agents import reference_agent

    careful = reference_agent("careful")
    seen: list[str] = []

    async def mine(episode: Any) -> str | None:  # a closure: pickled by value
        seen.append(episode.case_id)  # appends to the worker's copy, not this list
        return await careful(episode)

    run = passhat.evaluate("refunds", mine, trials=1, out=tmp_path / "run", sanity=False, executor="ray",
                           cases=["refund-4812"])
    assert [r.outcome for r in run.records()] == ["pass"] and seen == []


def test_an_agent_that_cannot_be_pickled_is_refused_before_any_trial(cluster: Any, tmp_path: Path) -> None:
    lock = threading.Lock()

    async def holds_a_lock(episode: Any) -> str | None:
        with lock:
            return None

    with pytest.raises(PasshatError, match="cannot be sent to Ray workers.*module:function"):
        passhat.evaluate("refunds", holds_a_lock, trials=1, out=tmp_path / "run", executor="ray")
    assert not (tmp_path / "run" / "trials.jsonl").exists()


def test_without_ray_the_option_says_what_to_install(tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    r = cli("run", "refunds", "--agent", "careful", "--executor", "ray", "--out", tmp_path / "run")
    assert r.exit_code == 2
    assert "pip install 'passhat[ray]'" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "run" / "trials.jsonl").exists()


@pytest.mark.parametrize(("address", "says"), [("127.0.0.1:1", "nothing answers at 127.0.0.1:1"),
                                                ("no-port-here", "expected HOST:PORT")])
def test_a_bad_ray_address_is_bad_input(tmp_path: Path, address: str, says: str) -> None:
    """In a process of its own: in this one, Ray may already be initialised by the cluster fixture."""
    r = subprocess.run([sys.executable, "-m", "passhat", "run", "refunds", "--agent", "careful", "--executor", "ray",
                        "--ray-address", address, "--out", str(tmp_path / "run"), "-q"],
                       capture_output=True, text=True, timeout=120, env={**_env(), "COLUMNS": "400"})
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and f"--ray-address {address!r}" in r.stderr
    assert not (tmp_path / "run" / "trials.jsonl").exists()


def test_ray_address_without_the_ray_executor_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PasshatError, match="--ray-address applies to --executor ray"):
        passhat.evaluate("refunds", "careful", trials=1, out=tmp_path / "run", ray_address="auto")


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.filterwarnings("ignore:no price for agent model")  # the fake model has no price
def test_two_workers_share_one_rate_limit(cluster: Any, tmp_path: Path) -> None:
    """16 model calls from 2 worker processes: with a limit each, they would see twice the limit between them.
    (A window of 2 s, not 1: the server sees a call a few milliseconds after its turn, more when a worker is busy.)"""
    import yaml

    from passhat.llm.ratelimit import RateLimit
    from passhat.testing.fake_models import FakeModelServer, FakeRequest, ToolUse, Turn, busiest_window

    notes = Path(__file__).parents[1] / "data" / "notes"
    case = yaml.safe_load((notes / "cases" / "add-note.yaml").read_text())
    case["domain"] = str(notes / "domain.py")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "add-note.yaml").write_text(yaml.safe_dump(case))

    def script(req: FakeRequest) -> Turn:
        if req.turn == 0:
            return Turn(tool_calls=[ToolUse("add_note", {"title": "call mom", "priority": 2})])
        return Turn(text="I added the note. ###DONE###")

    with FakeModelServer(script) as server:
        run = passhat.evaluate(tmp_path / "suite", "openai:scripted-model", base_url=server.openai_url, trials=8,
                               concurrency=8, out=tmp_path / "run", sanity=False, executor="ray",
                               rate_limits={"scripted-model": RateLimit(10, window_s=2.0)})
    assert run.manifest.executor == {"kind": "ray", "address": "local", "workers": 2}
    assert [r.outcome for r in run.records()] == ["pass"] * 8
    # counted over 1.5 s of the server's clock: a call reaches the server some time after the limiter granted
    # it (more on a loaded machine), so 2 s of arrivals can hold calls granted in two windows; a limit per
    # worker would still show 16 in the first instants
    assert len(server.requests) == 16 and busiest_window(server.requests, 1.5) <= 10
    assert not [a for a in ray.util.list_named_actors() if a.startswith("passhat-rate-limits-")]  # stopped with the run


# -- an in-process agent that blocks its worker's event loop (docs/design/022, section 3) --------------------

def test_a_trial_whose_time_another_agent_took_on_its_worker_is_retried_not_a_fail(cluster: Any,
                                                                                   tmp_path: Path) -> None:
    check_a_trial_whose_time_another_took_is_retried(tmp_path, executor="ray")


def test_agents_that_hold_their_workers_loop_for_good_are_time_limit_and_the_run_goes_on(
        cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_loops_held_for_good_are_time_limit(tmp_path, monkeypatch, "Ray worker", executor="ray")


def test_a_worker_blocked_in_c_code_is_killed_by_the_drivers_deadline(cluster: Any, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    check_a_worker_stuck_in_c_code_is_killed(tmp_path, monkeypatch, "Ray worker", executor="ray")
