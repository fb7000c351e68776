"""A thread that watches the event loop's heartbeat and names the trial whose agent blocks it.

An in-process ``async def`` agent that never awaits (``while True: pass``, ``time.sleep(20)``) holds the
whole run's event loop: no timer fires, no other trial moves, Ctrl-C's cancellation cannot be delivered.
The loop cannot be taken back from it; what can be done (docs/design/022-bounded-trials-and-inputs.md):

- while an agent runs, the trial's task it runs in is tagged with its trial (:meth:`LoopWatchdog.enter`,
  :meth:`~LoopWatchdog.leave` when it ends; a task factory carries the tag to the tasks the agent creates),
  so while the beat has stopped the thread can read which trial's code holds the loop
  (``asyncio.current_task(loop)`` is readable from another thread);
- past that trial's limit it prints one line naming it; if the loop comes back, the trial ends as
  ``time_limit`` (the trial's own check, :func:`passhat.runner.trial._within_limit`);
- not back within :data:`GRACE_S` after the limit, the run is aborted through :mod:`passhat.shutdown`:
  the ``on_abort`` callback records the blocked trial and marks the manifest, then
  :func:`~passhat.shutdown.hard_exit` runs every cleanup and exits :data:`~passhat.errors.EXIT_INCOMPLETE`.
  A Ray worker's watchdog (``exit_on_abort=False``) only hands the trial to ``on_abort``: the driver, in
  another process, records it, kills the worker and has Ray start another (runner/dispatch.py);
- the blocked intervals are kept, so a trial that ran out of time while *another* trial held the loop
  is told (:meth:`LoopWatchdog.lost_to_others`) and becomes an infrastructure error, not its ``fail``.

A C extension that holds the GIL forever stops this thread too; nothing in-process can help there.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from passhat import shutdown
from passhat.errors import EXIT_INCOMPLETE

HEARTBEAT_S = 0.1
"""How often the loop beats and the thread looks (ten callbacks a second: nothing next to a trial)."""
BLOCK_NOTICE_S = 0.5
"""A beat this late means the loop was blocked (a busy loop with -j 100 is late by milliseconds)."""
SAMPLE_AFTER_S = 2 * HEARTBEAT_S
"""A beat this late makes the thread read whose code holds the loop: well before a block counts, so every
block that counts has its culprit."""
GRACE_S = 30.0
"""How long past a trial's limit a blocked loop may stay blocked before the run is aborted: long enough
for a synchronous call that is merely slow (``time.sleep(20)`` against a 3 s limit comes back, and is that
trial's ``time_limit``), short next to a CI job that would otherwise hang until its own timeout. A module
attribute so a test can make it short."""


@dataclass(eq=False)
class TrialSlot:
    """One trial's agent as the watchdog sees it."""

    case_id: str
    trial: int
    limit_s: float
    deadline: float
    """``time.monotonic()`` seconds when its time runs out."""
    episode: Any = None
    """The trial's episode: what it did so far is what the record of an aborted run holds."""
    named: bool = False
    """Whether the watchdog has already said that this trial blocks the loop past its limit."""

    def label(self) -> str:
        return f"{self.case_id}#{self.trial}"


@dataclass
class Block:
    """An interval in which the loop did not beat, and whose code held it (``None``: not an agent's)."""

    start: float
    end: float
    culprit: TrialSlot | None = None


@dataclass
class _Ongoing:
    start: float
    culprit: TrialSlot | None = None


@dataclass
class LoopWatchdog:
    """Watches one event loop while a run executes; see the module docstring."""

    on_abort: Callable[[TrialSlot, str], None] | None = None
    """Records the blocked trial and marks the manifest, from the watchdog's thread, before the hard exit."""
    exit_on_abort: bool = True
    """End the process after ``on_abort``: in the run's own process nothing else can stop the agent. A Ray
    worker's watchdog leaves the ending to the driver, which kills the worker and goes on."""
    ending: str = "run aborted"
    """What giving up on a blocked trial does, as the first words of the reason recorded for it."""
    grace_s: float = field(default_factory=lambda: GRACE_S)
    """:data:`GRACE_S` when the watchdog was made (a Ray worker is given the driver's)."""
    report: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))
    blocks: collections.deque[Block] = field(default_factory=lambda: collections.deque(maxlen=1000))

    def __post_init__(self) -> None:
        self._slots: weakref.WeakKeyDictionary[asyncio.Task[Any], TrialSlot] = weakref.WeakKeyDictionary()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last_beat = time.monotonic()
        self._ongoing: _Ongoing | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._handle: asyncio.TimerHandle | None = None
        self._thread: threading.Thread | None = None
        self._previous_factory: Any = None

    # -- on the loop -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Begin beating on the running loop and watching it from a daemon thread."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._previous_factory = loop.get_task_factory()
        loop.set_task_factory(self._make_task)
        self._last_beat = time.monotonic()
        self._handle = loop.call_later(HEARTBEAT_S, self._beat)
        self._thread = threading.Thread(target=self._watch, name="passhat-loop-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._handle is not None:
            self._handle.cancel()
        if self._loop is not None and self._loop.get_task_factory() == self._make_task:
            self._loop.set_task_factory(self._previous_factory)
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def enter(self, task: asyncio.Task[Any], slot: TrialSlot) -> None:
        """Tag ``task`` (the trial's, while its agent runs in it) with its trial; the tasks it creates meanwhile
        inherit the tag."""
        with self._lock:
            self._slots[task] = slot

    def leave(self, task: asyncio.Task[Any], slot: TrialSlot) -> None:
        """Untag ``task``: its agent has ended, and what it runs next is the harness's (the tasks the agent
        created keep their tag)."""
        with self._lock:
            if self._slots.get(task) is slot:
                del self._slots[task]

    def lost_to_others(self, slot: TrialSlot, since: float) -> Block | None:
        """The longest block since ``since`` whose culprit was not ``slot`` (another agent, the harness)."""
        with self._lock:
            self._close_block(time.monotonic())
            mine = [b for b in self.blocks if b.end > since and b.culprit is not slot]
        return max(mine, key=lambda b: b.end - b.start, default=None)

    def held_by(self, slot: TrialSlot, since: float) -> float:
        """How long, in all, ``slot``'s own code held the loop since ``since``."""
        with self._lock:
            self._close_block(time.monotonic())
            return sum(b.end - max(b.start, since) for b in self.blocks if b.end > since and b.culprit is slot)

    def _make_task(self, loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        parent = asyncio.current_task(loop)
        if self._previous_factory is not None:
            task = self._previous_factory(loop, coro, **kwargs)
        else:
            task = asyncio.Task(coro, loop=loop, **kwargs)
        slot = self._slots.get(parent) if parent is not None else None
        if slot is not None:
            self._slots[task] = slot
        return task

    def _close_block(self, now: float) -> None:
        """On the loop, under the lock: the loop runs again, so a block in progress has ended now. Called by
        the beat and by the trials' own checks, which may run before the overdue beat does."""
        if now - self._last_beat >= BLOCK_NOTICE_S:
            ongoing = self._ongoing
            self.blocks.append(Block(self._last_beat, now, ongoing.culprit if ongoing is not None else None))
        self._ongoing = None
        self._last_beat = now

    def _beat(self) -> None:
        with self._lock:
            self._close_block(time.monotonic())
        if not self._stop.is_set():
            self._handle = asyncio.get_running_loop().call_later(HEARTBEAT_S, self._beat)

    # -- on the watchdog's thread ------------------------------------------------------------------------

    def _watch(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            now = time.monotonic()
            with self._lock:
                since = self._last_beat
                if now - since < SAMPLE_AFTER_S:
                    continue
                if self._ongoing is None:
                    self._ongoing = _Ongoing(since)
                ongoing = self._ongoing
                if ongoing.culprit is None and self._loop is not None:
                    task = asyncio.current_task(self._loop)
                    ongoing.culprit = self._slots.get(task) if task is not None else None
            slot = ongoing.culprit
            if slot is None or now <= slot.deadline or now - since < BLOCK_NOTICE_S:
                continue
            if not slot.named:
                slot.named = True
                self.report(f"trial {slot.label()}: the agent has blocked the event loop for {now - since:.1f} s, "
                            f"past its {slot.limit_s:g} s limit (an in-process agent that never awaits holds every "
                            "trial; --isolate process runs it where it can be stopped)")
            if now > slot.deadline + self.grace_s:
                self._abort(slot, now - since)
                return

    def _abort(self, slot: TrialSlot, held: float) -> None:
        why = (f"{self.ending}: trial {slot.label()}'s agent has blocked the event loop for {held:.0f} s, "
               f"{self.grace_s:g} s past its {slot.limit_s:g} s limit, and an in-process agent cannot be stopped "
               "— run it with --isolate process")
        if self.on_abort is not None:
            with contextlib.suppress(Exception):  # the exit must happen whatever recording it managed
                self.on_abort(slot, why)
        if self.exit_on_abort:
            shutdown.hard_exit(why, code=EXIT_INCOMPLETE)


CURRENT_WATCHDOG: contextvars.ContextVar[LoopWatchdog | None] = contextvars.ContextVar(
    "passhat_loop_watchdog", default=None)


@contextlib.contextmanager
def watching_loop(on_abort: Callable[[TrialSlot, str], None] | None = None) -> Iterator[LoopWatchdog]:
    """Watch the running loop for the code inside (the run wraps its executor in it)."""
    dog = LoopWatchdog(on_abort=on_abort)
    dog.start()
    token = CURRENT_WATCHDOG.set(dog)
    try:
        yield dog
    finally:
        CURRENT_WATCHDOG.reset(token)
        dog.stop()


__all__ = ["BLOCK_NOTICE_S", "CURRENT_WATCHDOG", "GRACE_S", "HEARTBEAT_S", "Block", "LoopWatchdog", "TrialSlot",
           "watching_loop"]
