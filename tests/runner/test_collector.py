"""The garbage collector while a run executes (runner/collector.py): earlier objects frozen, young collections
rarer, and everything as it was once the run ends."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from passhat.runner.collector import RUN_THRESHOLD, run_collector


@pytest.fixture(autouse=True)
def own_collector() -> Iterator[None]:
    """Each test starts from Python's usual setting and leaves it so, whatever it changed."""
    saved, enabled = gc.get_threshold(), gc.isenabled()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)
    if not enabled:
        gc.disable()


def test_a_run_freezes_what_exists_and_restores_the_collector_after() -> None:
    with run_collector():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (RUN_THRESHOLD, 10, 10)
        a: list[Any] = []
        a.append(a)  # a cycle made during the run is still garbage the collector finds
        del a
        assert gc.collect() >= 1
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == (700, 10, 10)


def test_nested_runs_restore_once_the_outermost_ends_even_when_it_raises() -> None:
    with pytest.raises(RuntimeError), run_collector():
        with run_collector():
            pass
        assert gc.get_threshold()[0] == RUN_THRESHOLD and gc.get_freeze_count() > 0
        raise RuntimeError("the run failed")
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == (700, 10, 10)


def test_a_program_s_own_freeze_and_settings_are_kept() -> None:
    gc.set_threshold(50_000, 10, 10)  # already rarer than the run's: left alone
    gc.freeze()
    with run_collector():
        assert gc.get_threshold() == (50_000, 10, 10)
    # not equal to the count before: frozen objects still die by reference counting (another test's leftovers did)
    assert gc.get_freeze_count() > 0, "a freeze the program made is not undone"
    gc.disable()
    with run_collector():
        assert not gc.isenabled()
    gc.enable()
    gc.set_threshold(0)  # collection off through the threshold: stays off
    with run_collector():
        assert gc.get_threshold()[0] == 0


def _collector_probe(seen: list[tuple[int, int]]) -> Any:
    """The careful agent, noting the collector's young threshold and frozen count as each trial starts."""
    from passhat.agents import reference_agent

    careful = reference_agent("careful")

    async def agent(episode: Any) -> str | None:
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))
        return await careful(episode)

    return agent


def test_execute_runs_its_trials_with_the_run_s_collector(tmp_path: Path) -> None:
    from passhat.cases import load_suite
    from passhat.runner import RunConfig, execute

    seen: list[tuple[int, int]] = []
    agent = _collector_probe(seen)

    suite = load_suite("refunds")
    one = dataclasses.replace(suite, cases=suite.cases[:2])
    cfg = RunConfig(suite=one, agent=agent, agent_spec="probe", trials=1, out=tmp_path / "run", concurrency=4)
    asyncio.run(execute(cfg))
    assert seen and all(threshold == RUN_THRESHOLD and frozen > 0 for threshold, frozen in seen)
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_a_ray_worker_runs_its_trials_with_the_run_s_collector() -> None:
    """A Ray worker runs trials outside ``execute()``: from ``ready`` (the driver waits for it before the first
    trial) to ``close`` it has the local run's setting. Built in this process, without Ray: the worker is a
    plain class that Ray wraps as an actor."""
    from passhat.cases import load_suite
    from passhat.runner.ray_worker import SuiteRef, TrialWorker, WorkerRecipe

    seen: list[tuple[int, int]] = []
    agent = _collector_probe(seen)

    suite = load_suite("refunds")
    parts = type("Parts", (), {"agent": agent, "user": None, "judge": None})
    recipe = WorkerRecipe(suite=SuiteRef.of(dataclasses.replace(suite, cases=suite.cases[:1])), setup=lambda: parts,
                          agent_spec="probe", trials=1, seed=0)

    async def work() -> None:
        worker = TrialWorker(recipe)
        await worker.ready()
        await worker.run(suite.cases[0].id, 0, 1)
        await worker.close()

    asyncio.run(work())
    assert seen and all(threshold == RUN_THRESHOLD and frozen > 0 for threshold, frozen in seen)
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
