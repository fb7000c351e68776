"""The agent runs in its trial's own task (runner/in_task.py, docs/design/032): the next trial starts in the step
the last one ended in, and what a task of its own gave the agent is kept — its context, the limit, the run's
cancellation, a turn for the others when it never waits."""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path
from typing import Any

import pytest

from passhat import outages
from passhat.cases import load_suite
from passhat.runner import RunConfig, RunStore, execute
from passhat.runner.records import TrialRecord

NOTES = Path(__file__).parents[1] / "data" / "notes"
MINE: contextvars.ContextVar[int | None] = contextvars.ContextVar("mine", default=None)


def notes_cases(tmp_path: Path, limits: str = "") -> Path:
    cases = tmp_path / "cases"
    cases.mkdir(exist_ok=True)
    text = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))
    (cases / "add-note.yaml").write_text(text + limits)
    return cases


def config(tmp_path: Path, agent: Any, *, trials: int, concurrency: int = 1, limits: str = "") -> RunConfig:
    return RunConfig(suite=load_suite(str(notes_cases(tmp_path, limits))), agent=agent, agent_spec="test",
                     trials=trials, concurrency=concurrency, out=tmp_path / "run")


def records(tmp_path: Path) -> list[TrialRecord]:
    return sorted(RunStore(tmp_path / "run").load(), key=lambda r: r.trial)


async def add_note(episode: Any) -> str:
    await episode.call("add_note", {"title": "call mom", "priority": 2})
    return "added the note"


def test_the_next_trial_starts_in_the_loop_step_the_last_one_ended_in(tmp_path: Path) -> None:
    # A loop step is counted by a callback that runs once per turn of the loop. Before, the trial's grading ran a
    # turn after its agent's task ended, and the next agent's task started a turn later: at -j 256 every
    # trial of a wave was graded before any started its next wait (design 032).
    turns = [0]
    starts: list[int] = []
    ends: list[int] = []

    def count() -> None:
        turns[0] += 1
        asyncio.get_running_loop().call_soon(count)

    async def agent(episode: Any) -> str:
        if not starts:
            count()
        starts.append(turns[0])
        await asyncio.sleep(0)  # it waits once, as any agent that calls a model does
        reply = await add_note(episode)
        ends.append(turns[0])
        return reply

    asyncio.run(execute(config(tmp_path, agent, trials=5)))
    assert [r.outcome for r in records(tmp_path)] == ["pass"] * 5
    assert starts[1:] == ends[:-1]  # graded, recorded and the next one started without a turn of the loop


def test_an_agent_keeps_its_context_variables_to_itself_and_sees_its_trials_watch(tmp_path: Path) -> None:
    seen: list[tuple[int | None, int | None, bool]] = []

    async def agent(episode: Any) -> str:
        before = MINE.get()
        MINE.set(episode.trial)

        async def child() -> int | None:  # a task it creates has its context, as before
            return MINE.get()

        inherited = await asyncio.create_task(child())
        seen.append((before, inherited, outages.CURRENT_TRIAL.get() is not None))
        return await add_note(episode)

    asyncio.run(execute(config(tmp_path, agent, trials=3)))  # -j 1: the three trials run in one task
    assert seen == [(None, 0, True), (None, 1, True), (None, 2, True)]
    assert MINE.get() is None


def test_a_time_limit_is_taken_back_so_the_next_trial_in_the_task_is_not_cancelled(tmp_path: Path) -> None:
    # The limit cancels the trial's task; the next trial in that task raises CancelledError on its own, which
    # is its failure, not a cancellation of the run: the task's cancellation count was restored.
    async def agent(episode: Any) -> str:
        if episode.trial == 0:
            await asyncio.Event().wait()  # never set: stopped at the limit
        raise asyncio.CancelledError

    asyncio.run(execute(config(tmp_path, agent, trials=2, limits="limits: {max_seconds: 0.05}\n")))
    first, second = records(tmp_path)
    assert (first.end_reason, first.error) == ("time_limit", "time limit: the agent did not finish within 0.05s")
    assert second.end_reason == "agent_error" and "raised CancelledError itself" in (second.error or "")


def test_an_agent_that_swallows_its_time_limit_is_over_it(tmp_path: Path) -> None:
    async def agent(episode: Any) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            pass
        return await add_note(episode)  # a right answer, past the limit

    asyncio.run(execute(config(tmp_path, agent, trials=1, limits="limits: {max_seconds: 0.05}\n")))
    [record] = records(tmp_path)
    assert (record.outcome, record.end_reason) == ("fail", "time_limit")
    assert record.error is not None and "past its 0.05s limit" in record.error


def test_the_runs_cancellation_stops_an_agent_that_swallows_it(tmp_path: Path) -> None:
    # Ctrl-C cancels the run's task (passhat.shutdown): an agent that catches the cancellation and returns
    # must not keep the run going, as a task of its own could not.
    async def main() -> None:
        started = asyncio.Event()

        async def agent(episode: Any) -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                pass
            return await add_note(episode)

        run = asyncio.create_task(execute(config(tmp_path, agent, trials=3)))
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    assert records(tmp_path) == []  # the trial in flight was not recorded, and no other one started


def test_trials_whose_agents_never_wait_still_take_turns(tmp_path: Path) -> None:
    # An agent that never gives the loop back would let its task run trial after trial; each trial yields
    # once, so the two tasks of -j 2 alternate (and the writer's batches and the watchdog's beat get a turn).
    order: list[int] = []
    tasks: dict[int, int] = {}

    async def agent(episode: Any) -> str:
        order.append(tasks.setdefault(id(asyncio.current_task()), len(tasks)))
        return await add_note(episode)

    asyncio.run(execute(config(tmp_path, agent, trials=6, concurrency=2)))
    assert order == [0, 1, 0, 1, 0, 1]
