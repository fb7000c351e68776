"""A driver's attempts in flight over worker processes (Ray actors, or processes forked here): which worker
runs each, what a finished one becomes, and when a worker is given up on.

Attempts go to the least-loaded worker that is up, at most ``-j`` at a time. A finished attempt is final,
or (it raised: infrastructure) queued again until :data:`~passhat.runner.executor.MAX_ATTEMPTS`. A worker
that died fails what it was running the same way, and nothing is sent to it until it is back.

A worker whose event loop is blocked for good is given up on (docs/design/022, section 3), in one of two
ways, and then killed and replaced (:meth:`Workers.kill`, then :meth:`Workers.back`):

- its watchdog names the trial whose agent holds the loop past the limit and the grace
  (:meth:`~passhat.runner.ray_worker.TrialWorker.blocked`): that trial is recorded as the worker built it,
  ``fail`` / ``time_limit``, and every other attempt on the worker is an infrastructure error, retried
  without spending its retry (a retry sent to another worker that turns out blocked too would otherwise
  end as ``error`` for another trial's agent; it cannot loop, as each give-up records a blocked trial);
- nothing is heard by an attempt's deadline (its limit, the grace and :data:`DEADLINE_MARGIN_S`) and the
  worker does not answer within :data:`ANSWER_WITHIN_S` (something keeps its GIL, so not even the watchdog
  runs): which attempt caused it cannot be known, so each one on it is an infrastructure error, retried.

Either way the run is told (``replaced``), so the manifest says so and the run is not reported as clean.
What a kind of worker is (a Ray actor, a forked process) is behind :class:`Workers`; the rules are here once.
"""

from __future__ import annotations

import asyncio
import math
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from passhat import shutdown
from passhat.cases import Case
from passhat.errors import InfrastructureError
from passhat.runner.executor import MAX_ATTEMPTS, Emit, Replaced
from passhat.runner.records import TrialRecord
from passhat.runner.trial import error_record
from passhat.seeding import trial_seed

DEADLINE_MARGIN_S = 10.0
"""How long past an attempt's limit and grace the driver waits for its worker's watchdog before asking
whether the worker answers at all: room for the world's reset before the agent starts (the limit counts
from there) and for a loaded machine. Once the worker has answered, it is asked again this often while
the attempt lasts (grading, a judge). A module attribute so a test can make it short."""
ANSWER_WITHIN_S = 10.0
"""A worker that does not answer :meth:`Workers.alive` within this long is stuck: its Python does not run
(the answer comes from a thread of its own, not the trials' loop)."""


class WorkerLost(Exception):
    """The worker running a call died (killed, out of memory, its node lost): what it ran is gone with it."""


class WorkerFailed(Exception):
    """A call failed on its way to or from a worker that is still up (the Ray task failed, say)."""


class Workers(Protocol):
    """The driver's view of one run's worker processes, numbered 0 … ``len - 1``. Each runs
    :class:`~passhat.runner.ray_worker.TrialWorker`; the calls raise :class:`WorkerLost` when the worker dies
    and :class:`WorkerFailed` when only the call does."""

    what: str
    """What a worker is called in the reasons recorded and reported ("Ray worker", "worker process")."""
    count: int
    grace_s: float
    """The workers' watchdog grace (the recipe's): an attempt's deadline counts it."""
    seed: int
    ahead: int
    """Attempts a worker may hold beyond its lanes, waiting to start the moment one of its trials ends (a forked
    worker queues them itself; 0 for Ray). The worker, not the driver, keeps its trials within its lanes."""

    def run(self, worker: int, case_id: str, trial: int, attempt: int) -> Awaitable[tuple[str, bool]]:
        """One attempt on ``worker``: its record as JSON and whether it raised."""
        ...

    def blocked(self, worker: int) -> Awaitable[tuple[str, str] | None]:
        """Once ``worker``'s watchdog gives up on a trial: its record (JSON) and why; ``None`` if it closes first."""
        ...

    def alive(self, worker: int) -> Awaitable[None]:
        """Returns once ``worker`` answers (from outside its trials' loop)."""
        ...

    def kill(self, worker: int) -> None:
        """Kill ``worker`` at once; :meth:`back` brings up another in its place."""
        ...

    def back(self, worker: int) -> Awaitable[None]:
        """Returns once a worker is up in place of one that died or was killed; raises
        :class:`~passhat.errors.RunError` (the run stops, its records kept) when none comes back."""
        ...


@dataclass
class Flight:
    """One attempt sent to a worker."""

    case: Case
    trial: int
    attempt: int
    spent: int
    """Attempts before this one that count against :data:`~passhat.runner.executor.MAX_ATTEMPTS`."""
    worker: int
    started: float
    """``time.perf_counter()`` when it was sent (the error record's duration)."""
    deadline: float
    """``time.monotonic()`` by which its worker must have finished it, named a blocker, or answered."""

    def label(self) -> str:
        return f"{self.case.id}#{self.trial}"


class Dispatch:
    """One run's attempts over ``workers``; see the module docstring."""

    def __init__(self, workers: Workers, *, concurrency: int, emit: Emit, replaced: Replaced | None = None,
                 report: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> None:
        self.workers = workers
        self.emit = emit
        self.replaced = replaced
        self.report = report
        self.queue: deque[tuple[Case, int, int, int]] = deque()
        """(case, trial, attempt, attempts spent) still to send."""
        self.flying: dict[asyncio.Future[Any], Flight] = {}
        self.reviving: dict[asyncio.Future[Any], int] = {}
        """Workers that died or were killed, until one is back in their place: nothing is sent to them meanwhile."""
        self.watching: dict[asyncio.Future[Any], int] = {}
        """Each worker's pending :meth:`~passhat.runner.ray_worker.TrialWorker.blocked`."""
        self.checking: dict[asyncio.Future[Any], int] = {}
        """Workers being asked whether they answer at all (an attempt of theirs is past its deadline)."""
        self.load = [0] * workers.count
        self.room = [lanes(concurrency, workers.count, i) + workers.ahead for i in range(workers.count)]
        """Attempts each worker may hold: its share of ``-j`` (the trials it runs at once) and what it may queue."""
        self.sent = [0] * workers.count
        """Attempts sent to each worker so far."""
        self.share = 0
        """A worker's share of the run's first attempts (set by :meth:`run`)."""
        self.final: list[TrialRecord] = []
        self.arrived: list[tuple[Flight, asyncio.Future[Any]]] = []
        """Attempts that ended, their lanes free again, whose answers are still to be read: a worker's lanes are
        refilled before ~0.15 ms per record of parsing, so a wave of records does not hold the next trials."""
        self.landed: deque[asyncio.Future[Any]] = deque()
        """Calls finished since the loop last looked, in the order they finished. Each call tells this queue
        itself when it ends: waiting on every call in flight at each turn (``asyncio.wait``) cost a callback
        added and removed per call per finished one, ~0.3 ms per record at -j 256."""
        self._wake: asyncio.Future[None] | None = None
        self._next_check = math.inf
        """No attempt's deadline falls before this (``time.monotonic()``): the attempts are scanned only then."""

    async def run(self, pending: Sequence[tuple[Case, int]]) -> None:
        """Run every pair to a final record, handed to ``emit``."""
        self.queue.extend((case, trial, 1, 0) for case, trial in pending)
        self.share = -(-len(pending) // self.workers.count)
        for worker in range(self.workers.count):
            self._watch(worker)
        try:
            self._send()
            while self.flying or self.queue:  # a worker still restarting at the end is not waited for
                if not self.landed:
                    await self._next_landing()
                landed, self.landed = self.landed, deque()
                for done in landed:
                    self._finished(done)
                self._check_deadlines()
                self._send()  # the workers get their next attempts before the records are read and encoded
                arrived, self.arrived = self.arrived, []
                for flight, done in arrived:
                    self._settle(flight, *self._outcome(done, flight))
                if self.queue:
                    self._send()  # the retries among them
                final, self.final = self.final, []
                for record in final:
                    self.emit(record)
        finally:
            for future in [*self.flying, *self.reviving, *self.watching, *self.checking]:
                future.cancel()

    async def _next_landing(self) -> None:
        """Wait until a call finishes or the next deadline is due."""
        loop = asyncio.get_running_loop()
        self._wake = wake = loop.create_future()
        timer = None if math.isinf(self._next_check) else \
            loop.call_at(loop.time() + max(0.0, self._next_check - time.monotonic()), _set, wake)
        try:
            await wake
        finally:
            self._wake = None
            if timer is not None:
                timer.cancel()

    def _track(self, call: Awaitable[Any]) -> asyncio.Future[Any]:
        future = asyncio.ensure_future(call)
        future.add_done_callback(self._land)
        return future

    def _land(self, future: asyncio.Future[Any]) -> None:
        self.landed.append(future)
        if self._wake is not None:
            _set(self._wake)

    # -- sending and settling ----------------------------------------------------------------------------

    def _up(self) -> list[int]:
        down = set(self.reviving.values())
        return [i for i in range(self.workers.count) if i not in down]

    def _send(self) -> None:
        up = self._up()
        while self.queue:
            worker = min((w for w in up if self.load[w] < self.room[w]), key=self._order, default=None)
            if worker is None or self._past_share(worker, up):
                break
            case, trial, attempt, spent = self.queue.popleft()
            call = self._track(self.workers.run(worker, case.id, trial, attempt))
            deadline = time.monotonic() + case.limits.max_seconds + self.workers.grace_s + DEADLINE_MARGIN_S
            self.flying[call] = Flight(case, trial, attempt, spent, worker, time.perf_counter(), deadline)
            self._next_check = min(self._next_check, deadline)
            self.load[worker] += 1
            self.sent[worker] += 1

    def _order(self, worker: int) -> tuple[int, int]:
        """Which open worker gets the next attempt: with attempts held ahead, the one sent the fewest so far (its
        share of the run); otherwise the least loaded."""
        return (self.sent[worker], self.load[worker]) if self.workers.ahead else (self.load[worker], 0)

    def _past_share(self, worker: int, up: list[int]) -> bool:
        """Whether ``worker``, the open one sent the fewest, has had its share of the run while another worker that is up
        has not: that one takes the attempt when one of its lanes frees. Workers that hold attempts ahead
        would otherwise take more than their share whenever they ran a little faster, and at -j 256 over two
        workers 544 trials to one is a fifth wave of 0.6 s for some of its lanes where the local executor's
        lanes run four (docs/design/042). Without attempts ahead (Ray) a free lane takes what is left."""
        return bool(self.workers.ahead) and self.sent[worker] >= self.share and any(
            self.sent[w] < self.share for w in up if w != worker)

    def _settle(self, flight: Flight, record: TrialRecord, raised: bool, *, spends: bool = True) -> None:
        """An attempt's record is final, or (it raised) the trial goes back to the front of the queue."""
        spent = flight.spent + spends
        if raised and spent < MAX_ATTEMPTS:
            self.queue.appendleft((flight.case, flight.trial, flight.attempt + 1, spent))
        else:
            self.final.append(record)

    def _failed(self, flight: Flight, why: str) -> TrialRecord:
        seed = trial_seed(self.workers.seed, flight.case.id, flight.trial)
        return error_record(flight.case, flight.trial, seed, flight.attempt, flight.started, InfrastructureError(why))

    def _finished(self, done: asyncio.Future[Any]) -> None:
        """A call landed: settle what it was (nothing, when it was given up on and settled already)."""
        if done in self.reviving:
            self.reviving.pop(done)
            done.result()  # a worker that could not be brought back ends the run (resume it later)
            self._next_check = -math.inf  # its attempts' deadlines count again
        elif done in self.watching:
            self._heard(self.watching.pop(done), done)
        elif done in self.checking:
            worker = self.checking.pop(done)
            if worker not in self.reviving.values():
                self._answered(worker, done.result())
            self._next_check = -math.inf  # its attempts' deadlines count again (or were moved)
        elif done in self.flying:
            flight = self.flying.pop(done)
            self.load[flight.worker] -= 1
            if isinstance(done.exception(), WorkerLost):  # nothing more is sent to it until it is back
                self._revive(flight.worker)
            self.arrived.append((flight, done))

    def _outcome(self, future: asyncio.Future[Any], flight: Flight) -> tuple[TrialRecord, bool]:
        """The attempt's record, and whether it raised; a worker lost under it (it may or may not have run,
        and its record is gone with the worker) or a failed call is an infrastructure failure of the attempt."""
        try:
            text, raised = future.result()
        except (WorkerLost, WorkerFailed) as exc:
            return self._failed(flight, str(exc)), True
        return TrialRecord.model_validate_json(text), bool(raised)

    # -- workers given up on -----------------------------------------------------------------------------

    def _watch(self, worker: int) -> None:
        self.watching[self._track(self.workers.blocked(worker))] = worker

    def _heard(self, worker: int, done: asyncio.Future[Any]) -> None:
        """The worker's watchdog gave up on a trial (or the worker died or closed: nothing to do here)."""
        try:
            verdict = done.result()
        except (WorkerLost, WorkerFailed):
            return  # it died: the attempts it ran say so, and its revival watches it again
        if verdict is None or worker in self.reviving.values():
            return
        text, why = verdict
        blocked = TrialRecord.model_validate_json(text)
        self._give_up(worker, why, blocked,
                      f"trial {blocked.case_id}#{blocked.trial}'s agent held this attempt's {self.workers.what}'s event loop "
                      "for good; the worker was killed and replaced, and the attempt could not run its time")

    def _check_deadlines(self) -> None:
        """Ask each worker with an attempt past its deadline whether it answers (not one already asked, or
        coming back), and note when the next deadline falls."""
        now = time.monotonic()
        if now < self._next_check:
            return
        skip = {*self.reviving.values(), *self.checking.values()}
        late = {f.worker for f in self.flying.values() if f.deadline <= now and f.worker not in skip}
        for worker in late:
            self.checking[self._track(self._answers(worker))] = worker
        skip |= late
        self._next_check = min((f.deadline for f in self.flying.values() if f.worker not in skip), default=math.inf)

    async def _answers(self, worker: int) -> bool:
        try:
            await asyncio.wait_for(self.workers.alive(worker), ANSWER_WITHIN_S)
        except TimeoutError:
            return False
        except (WorkerLost, WorkerFailed):
            pass  # it died: its attempts say so
        return True

    def _answered(self, worker: int, answers: bool) -> None:
        """A worker past an attempt's deadline answered (its watchdog is in charge: ask again later) or not."""
        now = time.monotonic()
        late = [f for f in self.flying.values() if f.worker == worker and f.deadline <= now]
        if answers or not late:
            for flight in late:
                flight.deadline = now + DEADLINE_MARGIN_S
            return
        labels = ", ".join(sorted(f.label() for f in late))
        why = (f"{self.workers.what} replaced: it did not answer within {ANSWER_WITHIN_S:g} s while {labels} "
               f"{'was' if len(late) == 1 else 'were'} past the limit and {self.workers.grace_s:g} s of grace; code "
               "that keeps the GIL (an in-process agent's C extension, a runaway regular expression) stops even "
               "the loop's watchdog, so which trial did it is unknown — run the agent with --isolate process")
        self._give_up(worker, why, None,
                      f"this attempt's {self.workers.what} stopped answering (something in its process kept the GIL: "
                      f"{labels} in flight there); it was killed and replaced")

    def _give_up(self, worker: int, why: str, blocked: TrialRecord | None, lost: str) -> None:
        """Settle every attempt on ``worker`` (the blocked trial as its worker recorded it, the others as
        infrastructure errors of that attempt, retried: without spending a retry when the blocked trial is
        known, as spending one when it is not), then kill the worker and have another started in its place."""
        for future, flight in list(self.flying.items()):
            if flight.worker != worker:
                continue
            del self.flying[future]
            future.cancel()  # it fails when the worker is killed: already settled here
            self.load[worker] -= 1
            if blocked is not None and blocked.key == (flight.case.id, flight.trial):
                blocked.attempt = flight.attempt
                self.final.append(blocked)
            else:
                self._settle(flight, self._failed(flight, lost), True, spends=blocked is None)
        self.workers.kill(worker)
        self._revive(worker)
        self.report(why)
        if self.replaced is not None:
            self.replaced(why)

    def _revive(self, worker: int) -> None:
        if worker not in self.reviving.values():
            self.reviving[self._track(self._back(worker))] = worker

    async def _back(self, worker: int) -> None:
        """Wait until a worker is up in place of a dead one (attempts sent meanwhile would fail), then watch it."""
        await self.workers.back(worker)
        self._watch(worker)


def lanes(concurrency: int, count: int, worker: int) -> int:
    """Worker ``worker``'s share of ``-j`` over ``count`` workers: the shares differ by at most one and add up to
    ``concurrency`` (every worker at least one), so the trials running at once never exceed ``-j``."""
    return max(1, concurrency // count + (worker < concurrency % count))


def _set(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def close_within(normal_s: float) -> float:
    """How long to wait for workers told to close: ``normal_s``, or — when the command is being stopped (Ctrl-C,
    SIGTERM) — at most half the stop's grace. A worker whose loop an agent holds never reads ``close``; waiting
    for it would run out the driver's own grace, a hard exit instead of a stop. A worker that has not closed
    by then is killed."""
    return min(normal_s, shutdown.STOP_GRACE_S / 2) if shutdown.stop_requested() else normal_s
