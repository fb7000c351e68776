"""Trials start their post-agent work one per event-loop iteration, so model answers are not kept waiting.

asyncio runs every callback that was ready when a loop iteration began before it looks at the clock and the
sockets again. When many trials' model waits end together (``-j 256``, every agent answered at once), one
iteration ran all of their post-agent work — the diff, the grading, the record and the next trial's start,
256 × ~2.5 ms, over half a second — and every model answer or timer that fell due meanwhile was seen only
after it. Those late waits then ended together again, so the trials moved in waves, each wave's work
delaying the next wave's model calls: a simulated 0.2 s model call ended 0.15–0.3 s late on average
(docs/design/034).

:meth:`Turns.take` lets one trial begin that work per iteration: a trial that finds this iteration's turn
taken waits for a later one, so between two trials' work the loop polls its sockets and fires its timers.
A turn is not held: the trial's work runs until it next waits (for a world kind that clones a database in a
thread, a project's commands, a judge), and the next trial's turn comes in the next iteration whatever the
first one is waiting for. So a trial waits for the turn at most one iteration per trial ahead of it, and a
long wait of one trial never holds up another.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque

_OF_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Turns] = weakref.WeakKeyDictionary()


def turns() -> Turns:
    """The running loop's turns (one per loop: a run's trials share it, the Ray worker's loop has its own)."""
    loop = asyncio.get_running_loop()
    found = _OF_LOOP.get(loop)
    if found is None:
        found = _OF_LOOP[loop] = Turns(loop)
    return found


class Turns:
    """One :meth:`take` per loop iteration; the others wait, first come first served."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._taken = False
        """This iteration's turn is taken (or handed to a waiter who takes it next iteration)."""
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def take(self) -> None:
        """Return in an iteration in which no other trial has taken its turn (at once if this one is free)."""
        if not self._taken:
            self._taken = True
            self._pass_on()
            return
        waiter = self._loop.create_future()
        self._waiting.append(waiter)
        try:
            await waiter  # handed the next turn in the iteration before the one this resumes in
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed the turn, then cancelled: the next one gets it
                self._pass_on()
            elif waiter in self._waiting:  # still queued (a handover may have skipped it already)
                self._waiting.remove(waiter)
            raise
        self._pass_on()

    def _pass_on(self) -> None:
        """Hand the next iteration's turn to the first waiter, or free the turns from the next iteration on."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled waiter is done
                waiter.set_result(None)  # it resumes next iteration
                return
        self._loop.call_soon(self._free)

    def _free(self) -> None:
        """Next iteration: free, unless a trial queued meanwhile (it is handed the iteration after)."""
        if self._waiting:
            self._pass_on()
        else:
            self._taken = False
