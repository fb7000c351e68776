"""Stopping a command on Ctrl-C or SIGTERM within a bounded time, with the run's records kept.

CI cancelling a job, ``timeout`` and ``docker stop`` send SIGTERM; a person presses Ctrl-C. Either must
end ``passhat run`` promptly in every state — loading the agent, waiting on a model, running trials,
writing the summary — and leave a run folder that reads and resumes. Every way of asking goes through
:func:`request_stop`, which a signal handler calls and so can any thread (a watchdog that sees the event
loop blocked by an agent):

1. The first request cancels the work registered with :func:`stoppable` (the run's task, from its own
   loop): each trial ends through its ``finally`` blocks (copies removed, processes killed), the
   writer drains, the folder's lock is released, and the command exits 130. With nothing registered
   (plain code in the main thread), ``KeyboardInterrupt`` is raised there, as Python does for Ctrl-C.
2. It also arms a deadline, :data:`STOP_GRACE_S`. A process still running then — the event loop blocked
   by an agent's CPU loop, an import that never returns, a thread that will not finish — is ended by
   :func:`hard_exit`: the cleanups registered with :func:`at_hard_exit` run, then ``os._exit(130)``.
   Records are durable batch by batch (``runner/commit.py``) and a torn last line is dropped on read and
   cut on ``--resume``, so a hard exit loses only the trials that were in flight.
3. A second request (Ctrl-C twice) is a hard exit at once.

Only the command line installs the handlers (:func:`install`); a program embedding passhat keeps its
own, and ``asyncio.run``'s Ctrl-C handling applies there as usual.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

from passhat.errors import EXIT_INTERRUPTED

if TYPE_CHECKING:  # asyncio is imported where work registers, not by `passhat --help`
    import asyncio

STOP_GRACE_S = 4.0
"""How long a stop may take before the process is ended regardless (the promise is 5 s; trials cancelled
normally end in well under a second, workspace trials included)."""

_lock = threading.RLock()
_requests = 0
_reason = ""
_work: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []
_cleanups: list[Callable[[], None]] = []
_timer: threading.Timer | None = None


def request_stop(reason: str = "interrupted") -> None:
    """Ask the command to stop (safe from a signal handler and from any thread; see the module docstring).

    The first call cancels the registered work and arms the deadline; a second one exits at once.
    Called from the main thread with no work registered, it raises ``KeyboardInterrupt``.
    """
    global _requests, _reason, _timer
    with _lock:
        _requests += 1
        if _requests > 1:
            hard_exit(f"{reason} again")
        _reason = reason
        work = list(_work)
        _timer = threading.Timer(STOP_GRACE_S, hard_exit, args=(f"{reason}: still running {STOP_GRACE_S:g} s later",))
        _timer.daemon = True
        _timer.start()
    for loop, task in work:
        with contextlib.suppress(RuntimeError):  # that loop has closed meanwhile: its work is over
            loop.call_soon_threadsafe(task.cancel)
    if not work and threading.current_thread() is threading.main_thread():
        raise KeyboardInterrupt


def stop_requested() -> bool:
    """Whether a stop was asked for (the command then exits 130 whatever its work returned)."""
    return _requests > 0


@contextlib.contextmanager
def stoppable() -> Iterator[None]:
    """Within a coroutine: a stop request cancels the current task (instead of raising into the loop).

    A stop asked for before the task registered (while the agent was being imported, say) cancels it
    on entry, so no trial starts after a Ctrl-C.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("stoppable() needs a running task")
    entry = (loop, task)
    with _lock:
        _work.append(entry)
        already = _requests > 0
    if already:
        task.cancel()
    try:
        yield
    finally:
        with _lock:
            _work.remove(entry)


def at_hard_exit(cleanup: Callable[[], None]) -> Callable[[], None]:
    """Run ``cleanup`` if the process is ended by :func:`hard_exit` (kill a process group, remove a
    workspace copy); returns the function that unregisters it, for when the normal path cleaned up."""
    with _lock:
        _cleanups.append(cleanup)

    def forget() -> None:
        with _lock, contextlib.suppress(ValueError):
            _cleanups.remove(cleanup)

    return forget


def hard_exit(why: str = "interrupted", code: int = EXIT_INTERRUPTED) -> None:
    """End the process now with exit code ``code`` (130: interrupted), after the :func:`at_hard_exit`
    cleanups (each may fail alone). For a stop that the normal path could not finish in time, or a run the
    loop's watchdog aborts (:mod:`passhat.runner.watchdog`); callable from any thread."""
    with _lock:
        cleanups = list(reversed(_cleanups))
    for cleanup in cleanups:
        with contextlib.suppress(Exception):
            cleanup()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{why}; stopped without waiting further — the records already written are kept, "
                         "and a run continues with --resume\n")
        sys.stderr.flush()
    os._exit(code)


def install() -> Callable[[], None]:
    """Route SIGINT and SIGTERM to :func:`request_stop` for the duration of a command; returns the
    function that puts the previous handlers back. A signal whose handler the embedding program changed
    (not Python's default) is left alone, and so is everything outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: dict[int, Any] = {}
    for signum, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(signum) == default:
            previous[signum] = signal.signal(signum, _on_signal)

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return restore


def _on_signal(signum: int, frame: FrameType | None) -> None:
    request_stop("interrupted" if signum == signal.SIGINT else "terminated (SIGTERM)")


def reset() -> None:
    """Forget every request, registration and cleanup (for tests, and for a program that runs several
    commands in one process)."""
    global _requests, _reason, _timer
    with _lock:
        if _timer is not None:
            _timer.cancel()
        _requests, _reason, _timer = 0, "", None
        _work.clear()
        _cleanups.clear()


__all__ = ["STOP_GRACE_S", "at_hard_exit", "hard_exit", "install", "request_stop", "reset", "stop_requested",
           "stoppable"]
