"""An agent's coroutine run in the trial's own task, in a context of its own (docs/design/032).

A task made for the agent starts a loop turn after it is made, and the trial's code after the agent runs a
loop turn after the agent's task ends. With every trial's model waits ending together (-j 256 in-process),
each of those turns queues behind all the other trials' work of that moment: a trial's next one began its
first wait only after every trial of the wave had been graded, recorded and set up (design 032 measured it).
Awaited in the trial's task, the agent's first step runs at once, and the grading, the record and the next
trial's start run in the same step as its last.

What a task of its own gave the agent is kept: its steps run inside a copy of the context taken when it
starts (:class:`InContext`), so the context variables it sets stay its own and those the harness set then
(the trial's outage watch) are visible to it, and the tasks it creates inherit that context. The time limit,
a declared outage and the loop watchdog reach it through the trial's task instead
(:func:`passhat.runner.trial._within_limit`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class InContext(Generic[T]):
    """``await InContext(coro, context)``: ``coro`` run by the awaiting task, each of its steps inside ``context``.

    Each value the coroutine yields (the future it waits on) goes to the task unchanged, and what the task
    sends or throws back (a result, a cancellation) goes to the coroutine inside ``context``. Its return value
    or exception is the await's."""

    __slots__ = ("_context", "_coro", "suspended")

    def __init__(self, coro: Coroutine[Any, Any, T], context: contextvars.Context) -> None:
        self._coro = coro
        self._context = context
        self.suspended = 0
        """How many times the coroutine gave the event loop back (it awaited something not yet done)."""

    def __await__(self) -> Generator[Any, Any, T]:
        coro, run = self._coro, self._context.run
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = run(coro.send, value) if error is None else run(coro.throw, error)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            finally:
                error = None  # not kept alive by this frame while suspended
            self.suspended += 1
            try:
                value = yield step
            except GeneratorExit:  # the awaiting coroutine is being closed: close this one too
                run(coro.close)
                raise
            except BaseException as exc:  # a cancellation, or an exception thrown into the awaiting task
                value, error = None, exc
