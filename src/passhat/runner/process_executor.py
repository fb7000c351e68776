"""The processes executor: the run's trials spread over worker processes forked on this machine, one per CPU.

The local executor runs every trial on one event loop, so one core does all of a run's work: at ~3 ms of CPU
per trial, -j 256 with agents that wait 0.6 s per trial keeps one core busy and the run takes longer than its
waits (docs/design/042). This executor forks ``workers`` processes when the run starts, each a
:class:`~passhat.runner.ray_worker.TrialWorker` on a loop of its own (runner/process_worker.py), and keeps at
most ``-j`` attempts in flight across them, each sent to the least-loaded one: the rules of
:class:`~passhat.runner.dispatch.Dispatch`, which the Ray executor follows too (retries, a worker that dies,
one whose loop an agent holds for good). Every record comes back here and is handed to the run, the single
writer of ``trials.jsonl``.

Why fork, and not spawn: a forked worker starts with passhat and the run's Python already imported and the
agent object as the caller gave it (a closure, a lambda: nothing is pickled), so it is ready in tens of
milliseconds, not the half-second of a new interpreter, and any agent the local executor runs runs here. Each
worker still loads the suite again and builds its own images and agent (the recipe, as a Ray worker does), so
nothing the driver made before the fork (a workspace image, a started tool server) is shared or removed twice.
The driver's other threads (the run's writer, the loop's watchdog) do not exist in a forked worker; the
worker takes none of their locks. Fork is POSIX only: elsewhere this executor is refused before any trial.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import socket
import sys
import time
import warnings
from collections import deque
from collections.abc import Sequence
from typing import Any

from passhat.cases import Case
from passhat.errors import PasshatError, RunError
from passhat.runner.dispatch import Dispatch, WorkerFailed, WorkerLost, close_within, lanes
from passhat.runner.executor import Emit, Replaced
from passhat.runner.process_worker import child_main, frame, read_frame
from passhat.runner.ray_worker import WorkerRecipe
from passhat.runner.run import RunConfig

READY_WITHIN_S = 120.0
"""How long a new worker may take to load the suite and build its images and agent."""
CLOSE_WITHIN_S = 30.0
"""How long a worker told to stop may take (closing the agent's tool server, removing workspace copies)
before it is killed."""


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container's limit or ``taskset`` narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_fork() -> None:
    if not hasattr(os, "fork"):
        raise PasshatError("--executor processes forks worker processes, which this platform cannot do; "
                           "use --executor local (or ray)")


class Child:
    """One forked worker, as the driver holds it: its two lines and the calls waiting on them."""

    def __init__(self, pid: int, trials: socket.socket, watch: socket.socket) -> None:
        self.pid = pid
        self.trials_sock = trials
        self.watch_sock = watch
        self.writer: asyncio.StreamWriter | None = None
        self.watch_writer: asyncio.StreamWriter | None = None
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[int] = loop.create_future()
        self.verdict: asyncio.Future[tuple[str, str] | None] = loop.create_future()
        self.calls: dict[int, asyncio.Future[tuple[str, bool]]] = {}
        self.pings: deque[asyncio.Future[None]] = deque()
        self.gone: str | None = None
        """Why the worker is no more (its lines ended), once they have."""
        self.tasks: list[asyncio.Task[None]] = []

    async def open(self) -> None:
        reader, self.writer = await asyncio.open_connection(sock=self.trials_sock)
        watch_reader, self.watch_writer = await asyncio.open_connection(sock=self.watch_sock)
        self.tasks = [asyncio.ensure_future(self._read(reader)), asyncio.ensure_future(self._read_watch(watch_reader))]

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while (message := await read_frame(reader)) is not None:
            kind = message[0]
            if kind == "done":
                _settle(self.calls.pop(message[1], None), result=(message[2], message[3]))
            elif kind == "failed":
                _settle(self.calls.pop(message[1], None), error=WorkerFailed(f"the worker process failed it: {message[2]}"))
            elif kind == "ready":
                _settle(self.ready, result=message[1])
            elif kind == "unready":
                _settle(self.ready, error=PasshatError(f"--executor processes: a worker could not prepare the run: "
                                                       f"{message[1]}"))
        await self._ended()

    async def _read_watch(self, reader: asyncio.StreamReader) -> None:
        while (message := await read_frame(reader)) is not None:
            if message[0] == "alive" and self.pings:
                _settle(self.pings.popleft(), result=None)
            elif message[0] == "blocked":
                _settle(self.verdict, result=(message[1], message[2]))

    async def _ended(self) -> None:
        """The trials line ended: the process is gone (or going). Reap it, and fail what waited on it."""
        status = await asyncio.to_thread(_reap, self.pid)
        self.gone = f"the worker process running it died ({status})"
        lost = WorkerLost(self.gone)
        _settle(self.ready, error=PasshatError(f"--executor processes: a worker ended before it was ready ({status})"))
        _settle(self.verdict, error=lost)
        waiting: list[asyncio.Future[Any]] = [*self.calls.values(), *self.pings]
        for future in waiting:
            _settle(future, error=lost)
        self.calls.clear()
        self.pings.clear()

    def send(self, message: tuple[Any, ...]) -> None:
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(frame(message))

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def close_lines(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in (self.writer, self.watch_writer):
            if writer is not None:
                writer.close()
        for sock in (self.trials_sock, self.watch_sock):
            sock.close()


def _settle(future: asyncio.Future[Any] | None, *, result: Any = None, error: BaseException | None = None) -> None:
    if future is None or future.done():
        return
    if error is not None:
        future.set_exception(error)
        future.exception()  # retrieved: a call given up on (its flight settled elsewhere) leaves no warning behind
    else:
        future.set_result(result)


def _reap(pid: int) -> str:
    """Wait for a worker that is ending, and say how it ended."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return "already reaped"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by {signal.Signals(sig).name}" if sig in signal.Signals._value2member_map_ else f"signal {sig}"
    return f"exit code {os.WEXITSTATUS(status)}"


class ProcessWorkers:
    """The forked workers of one :meth:`ProcessExecutor.run`, as :class:`~passhat.runner.dispatch.Dispatch`
    sees workers."""

    what = "worker process"

    def __init__(self, recipe: WorkerRecipe, count: int, concurrency: int) -> None:
        self.recipe = recipe
        self.count = count
        self.lanes = [lanes(concurrency, count, i) for i in range(count)]
        self.ahead = max(1, self.lanes[0] // 4)
        """Attempts a worker holds beyond its lanes (a quarter more): when a wave of trials ends together, each
        lane starts its next trial at once instead of after the record's round trip through this process, which
        that wave keeps busy (docs/design/042)."""
        self.grace_s = recipe.grace_s
        self.seed = recipe.seed
        self.children: list[Child | None] = [None] * count
        self._ids = itertools.count()

    async def start(self) -> None:
        """Fork every worker and wait until each is ready. A worker that cannot prepare the run (its suite's
        files changed, its agent does not build) stops them all: a :class:`PasshatError`."""
        try:
            for worker in range(self.count):
                await self._fork(worker)
            await asyncio.wait_for(asyncio.gather(*(c.ready for c in self.children if c is not None)), READY_WITHIN_S)
        except BaseException:
            await self.stop()
            raise

    async def _fork(self, worker: int) -> None:
        trials, child_trials = socket.socketpair()
        watch, child_watch = socket.socketpair()
        inherited = [s for c in self.children if c is not None for s in (c.trials_sock, c.watch_sock)]
        inherited += [trials, watch]
        sys.stdout.flush()
        sys.stderr.flush()
        driver = os.getpid()
        with warnings.catch_warnings():  # Python 3.12 warns of fork in a process with threads: see the module docstring
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            child_main(self.recipe, self.lanes[worker], child_trials, child_watch, inherited, driver)
        child_trials.close()
        child_watch.close()
        child = Child(pid, trials, watch)
        self.children[worker] = child
        await child.open()

    def _child(self, worker: int) -> Child:
        child = self.children[worker]
        if child is None or child.gone is not None:
            raise WorkerLost(child.gone if child is not None and child.gone else "the worker process is not running")
        return child

    async def run(self, worker: int, case_id: str, trial: int, attempt: int) -> tuple[str, bool]:
        child = self._child(worker)
        rid = next(self._ids)
        future: asyncio.Future[tuple[str, bool]] = asyncio.get_running_loop().create_future()
        child.calls[rid] = future
        child.send(("run", rid, case_id, trial, attempt))
        try:
            return await future
        finally:
            child.calls.pop(rid, None)

    async def blocked(self, worker: int) -> tuple[str, str] | None:
        return await asyncio.shield(self._child(worker).verdict)

    async def alive(self, worker: int) -> None:
        child = self._child(worker)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        child.pings.append(future)
        assert child.watch_writer is not None
        child.watch_writer.write(b"?")
        await future

    def kill(self, worker: int) -> None:
        child = self.children[worker]
        if child is not None:
            child.kill()

    async def back(self, worker: int) -> None:
        """Fork another worker in place of one that died or was killed, once the old one is reaped."""
        old = self.children[worker]
        if old is not None:
            old.kill()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*old.tasks, return_exceptions=True)
            old.close_lines()
        try:
            await self._fork(worker)
            child = self.children[worker]
            assert child is not None
            await asyncio.wait_for(asyncio.shield(child.ready), READY_WITHIN_S)
        except (PasshatError, TimeoutError) as exc:
            raise RunError(f"a worker process died and another could not be started in its place ({exc}); the "
                           "trials recorded so far are kept: continue with --resume") from None

    async def stop(self) -> None:
        """Tell every worker to stop (it closes its agent and removes its workspaces), wait for it to end, and
        kill one that does not within :data:`CLOSE_WITHIN_S` (less when the command is being stopped:
        :func:`~passhat.runner.dispatch.close_within`)."""
        children = [c for c in self.children if c is not None]
        for child in children:
            child.send(("close",))
        deadline = time.monotonic() + close_within(CLOSE_WITHIN_S)
        for child in children:
            try:
                await asyncio.wait_for(asyncio.gather(*child.tasks, return_exceptions=True),
                                       max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                child.kill()
                await asyncio.gather(*child.tasks, return_exceptions=True)
            child.close_lines()
        self.children = [None] * self.count


class ProcessExecutor:
    """Runs a run's trials in ``workers`` processes forked from this one (see the module docstring)."""

    def __init__(self, recipe: WorkerRecipe, workers: int | None = None) -> None:
        check_fork()
        self.recipe = recipe
        self.workers = workers or usable_cpus()

    def describe(self) -> dict[str, object]:
        return {"kind": "processes", "workers": self.workers}

    async def run(self, cfg: RunConfig, pending: Sequence[tuple[Case, int]], emit: Emit, *,
                  replaced: Replaced | None = None) -> None:
        if not pending:
            return
        concurrency = max(1, cfg.concurrency)
        workers = ProcessWorkers(self.recipe, min(self.workers, concurrency, len(pending)), concurrency)
        await workers.start()
        try:
            await Dispatch(workers, concurrency=concurrency, emit=emit, replaced=replaced).run(pending)
        finally:
            await workers.stop()
