"""The worker side of the processes executor: a process forked from the run's, running trials on a loop of its own.

It is a :class:`~passhat.runner.ray_worker.TrialWorker` (the suite loaded again from its name or folder, the
agent, user and judge rebuilt from the recipe), reached over two sockets instead of through Ray:

- the *trials line*, read and written by the worker's event loop: ``("run", id, case, trial, attempt)`` in
  (at most the worker's lanes run at once; attempts beyond wait for a lane, so the driver can send the next
  ones ahead), ``("done", id, record_json, raised)`` or ``("failed", id, why)``
  out; ``("close",)`` or the end of the line (the driver is gone) ends the worker;
- the *watch line*, served by two threads of the worker's own, so that it answers while an agent holds the
  trials' loop: a byte in is answered ``("alive",)``; when the worker's watchdog gives up on a trial its
  verdict goes out as ``("blocked", record_json, why)`` (docs/design/022).

Every message is a 4-byte length and a pickle: both ends are this program, in processes forked from one.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import pickle
import signal
import socket
import struct
import sys
import threading
import traceback
from typing import Any, NoReturn

from passhat.runner.ray_worker import TrialWorker, WorkerRecipe

HEADER = struct.Struct(">I")
PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal this process gets when the thread that forked it ends."""


def frame(message: tuple[Any, ...]) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[Any, ...] | None:
    """The next message, or ``None`` at the end of the line (the other end closed or died)."""
    try:
        size = HEADER.unpack(await reader.readexactly(HEADER.size))[0]
        return pickle.loads(await reader.readexactly(size))  # type: ignore[no-any-return]
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def child_main(recipe: WorkerRecipe, lanes: int, trials: socket.socket, watch: socket.socket,
               inherited: list[socket.socket], driver: int) -> NoReturn:
    """What a forked worker runs; it never returns into the driver's code it was forked from.

    The fork copied the driver's state, its running event loop included: the worker starts a loop of its own,
    in an empty context (the driver's task's context variables, its watchdog among them, stay behind), and
    stops signals from waking the driver's loop (its wakeup fd is the driver's). Ctrl-C at a terminal reaches
    every process of the group: the driver decides what happens to the run and stops its workers itself."""
    code = 1
    try:
        _die_with_driver(driver)
        for sock in inherited:  # the driver's ends of the other workers' lines: their end must be the driver's alone
            sock.close()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        asyncio.events._set_running_loop(None)  # the driver's loop, running in the thread that forked
        contextvars.Context().run(asyncio.run, serve(recipe, lanes, trials, watch))
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # no atexit handlers or finalisers of the driver's objects: they are the driver's to run


def _die_with_driver(driver: int) -> None:
    """On Linux, have the kernel kill this worker when the driver (process id ``driver``) dies. The end of the
    trials line does that too, but only once this worker's loop reads it, which an agent holding the loop
    delays for good."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != driver:  # it died before that took effect
        os._exit(1)


async def serve(recipe: WorkerRecipe, lanes: int, trials: socket.socket, watch: socket.socket) -> None:
    """Build the worker, say so (or why not), then run the attempts that come, at most ``lanes`` at once, until
    told to stop."""
    reader, writer = await asyncio.open_connection(sock=trials)
    try:
        worker = TrialWorker(recipe)
        pid = await worker.ready()
    except Exception as exc:
        writer.write(frame(("unready", f"{type(exc).__name__}: {exc}")))
        await writer.drain()
        return
    WatchLine(watch, worker).start()
    writer.write(frame(("ready", pid)))
    running: set[asyncio.Task[None]] = set()
    free = asyncio.Semaphore(lanes)
    try:
        while (message := await read_frame(reader)) is not None and message[0] == "run":
            task = asyncio.get_running_loop().create_task(_attempt(worker, writer, free, *message[1:]))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        for task in running:
            task.cancel()
        await worker.close()
        await writer.drain()  # every record written reaches the driver before the process ends
        writer.close()


async def _attempt(worker: TrialWorker, writer: asyncio.StreamWriter, lanes: asyncio.Semaphore, rid: int,
                   case_id: str, trial: int, attempt: int) -> None:
    try:
        async with lanes:  # a trial starts when one of this worker's lanes is free
            text, raised = await worker.run(case_id, trial, attempt)
        message: tuple[Any, ...] = ("done", rid, text, raised)
    except Exception as exc:  # attempt_once records what a trial raises: this is the worker's own failure
        message = ("failed", rid, f"{type(exc).__name__}: {exc}")
    writer.write(frame(message))
    await writer.drain()


class WatchLine:
    """The watch line's two threads: one answers each byte the driver sends, one sends the watchdog's verdict."""

    def __init__(self, sock: socket.socket, worker: TrialWorker) -> None:
        self.sock = sock
        self.worker = worker
        self.lock = threading.Lock()

    def start(self) -> None:
        threading.Thread(target=self._answer, name="passhat-worker-alive", daemon=True).start()
        threading.Thread(target=self._verdict, name="passhat-worker-verdict", daemon=True).start()

    def _send(self, message: tuple[Any, ...]) -> None:
        with self.lock:
            self.sock.sendall(frame(message))

    def _answer(self) -> None:
        try:
            while self.sock.recv(1):
                self._send(("alive",))
        except OSError:
            return

    def _verdict(self) -> None:
        self.worker.given_up.wait()
        if self.worker.verdict is not None:
            try:
                self._send(("blocked", *self.worker.verdict))
            except OSError:
                return
