"""runner/turns.py: one trial's post-agent work begins per loop iteration, and nobody is left waiting."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from passhat.runner.turns import turns


class Iterations:
    """Counts loop iterations: a callback that schedules itself runs exactly once per iteration."""

    def __init__(self) -> None:
        self.count = 0
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        self._handle = self._loop.call_soon(self._tick)

    def stop(self) -> None:
        self._handle.cancel()


def test_trials_ready_together_take_their_turns_in_separate_iterations() -> None:
    async def main() -> list[int]:
        it = Iterations()
        seen: list[int] = []

        async def trial() -> None:
            await asyncio.sleep(0)  # all become ready in the same iteration, as when model waits end together
            await turns().take()
            seen.append(it.count)

        await asyncio.gather(*(trial() for _ in range(20)))
        it.stop()
        return seen

    seen = asyncio.run(main())
    assert len(seen) == 20
    assert len(set(seen)) == 20, f"two trials took a turn in one iteration: {seen}"
    assert max(seen) - min(seen) <= 20  # one per iteration, not one every other iteration


def test_a_timer_due_meanwhile_fires_between_two_trials_work() -> None:
    """The point of the turns: a model answer (here a timer) is not kept waiting behind every trial's work."""
    async def main() -> list[str]:
        events: list[str] = []
        loop = asyncio.get_running_loop()

        async def trial(name: str) -> None:
            await asyncio.sleep(0)
            await turns().take()
            events.append(name)
            if name == "a":
                loop.call_later(0, events.append, "answer")  # due at once, while b and c still wait
            for _ in range(2000):  # the trial's work: keeps the loop busy without waiting
                pass

        await asyncio.gather(*(trial(n) for n in "abc"))
        await asyncio.sleep(0)
        return events

    events = asyncio.run(main())
    assert events.index("answer") < events.index("c"), events


def _taker(done: list[str]) -> Callable[[str], Coroutine[Any, Any, None]]:
    """A trial that takes its turn and says so."""
    async def trial(name: str) -> None:
        await turns().take()
        done.append(name)

    return trial


def test_a_cancelled_waiter_does_not_hold_up_the_others() -> None:
    async def main() -> list[str]:
        done: list[str] = []
        trial = _taker(done)
        first = asyncio.create_task(trial("first"))
        waiters = [asyncio.create_task(trial(f"w{i}")) for i in range(4)]
        await asyncio.sleep(0)  # first takes this iteration's turn, the others queue
        waiters[1].cancel()
        await asyncio.gather(first, *waiters, return_exceptions=True)
        return done

    assert asyncio.run(main()) == ["first", "w0", "w2", "w3"]


def test_a_waiter_cancelled_after_being_handed_its_turn_passes_it_on() -> None:
    async def main() -> list[str]:
        done: list[str] = []
        trial = _taker(done)
        tasks = [asyncio.create_task(trial(n)) for n in ("a", "b", "c")]
        await asyncio.sleep(0)  # a took its turn and handed the next one to b
        tasks[1].cancel()  # b is cancelled before it resumes
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[1], asyncio.CancelledError)
        return done

    assert asyncio.run(main()) == ["a", "c"]


@pytest.mark.parametrize("runs", [2])
def test_each_loop_has_its_own_turns(runs: int) -> None:
    async def main() -> bool:
        t = turns()
        await t.take()
        return t is turns()

    for _ in range(runs):  # a second loop does not inherit a turn the first one left taken
        assert asyncio.run(main())


def test_the_local_executor_s_lanes_start_one_per_iteration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting a lane (its world's new copy, its agent up to its first wait) costs ~1 ms: started all in the
    iteration ``gather`` runs them in, 256 lanes held every timer for a quarter of a second, the first lanes'
    model answers included. Each lane's first trial now begins in an iteration of its own."""
    from types import SimpleNamespace

    import passhat.runner.executor as executor_module

    async def main() -> list[int]:
        it = Iterations()
        started: list[int] = []

        every_lane = asyncio.Event()

        async def trial(*_: Any, **__: Any) -> Any:
            started.append(it.count)
            if len(started) == 20:
                every_lane.set()
            await every_lane.wait()  # no lane's second trial starts before the last lane's first
            return SimpleNamespace(attempt=1)

        monkeypatch.setattr(executor_module, "run_trial", trial)
        suite = SimpleNamespace(domain_of=lambda case: None)
        cfg: Any = SimpleNamespace(concurrency=20, seed=0, suite=suite, agent=None, user=None, judge=None, cassette=None)
        case: Any = SimpleNamespace(id="c")
        await executor_module.LocalExecutor().run(cfg, [(case, t) for t in range(40)], emit=lambda record: None)
        it.stop()
        return started

    started = asyncio.run(main())
    assert len(started) == 40
    assert len(set(started[:20])) == 20, f"two lanes started in one iteration: {started[:20]}"
