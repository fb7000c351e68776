"""Plugging in a Python function or class as the agent: ``module:function`` or ``path.py:function``.

Async functions are awaited. Plain functions run in a daemon thread and receive a :class:`SyncEpisode`,
whose methods block on the event loop; the time limit still ends the trial and the run still finishes
(the thread cannot be killed, but its result is ignored and its further tool calls are refused). An agent
that blocks the event loop itself (a CPU-bound ``async def``) can only be stopped in a process of its own:
``--isolate process``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import threading
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from passhat.agents.protocol import Agent
from passhat.episode import Episode, ToolResult
from passhat.errors import AgentCrashed, PasshatError
from passhat.imports import describe_failure, import_file, import_module


class SyncEpisode:
    """A blocking view of an :class:`Episode` for agents written as plain functions."""

    def __init__(self, episode: Episode, loop: asyncio.AbstractEventLoop) -> None:
        self._episode = episode
        self._loop = loop
        self.closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._episode, name)

    def _run(self, coro: Awaitable[Any]) -> Any:
        if self.closed:
            raise RuntimeError("the trial is over (time limit); no more calls are accepted")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()  # type: ignore[arg-type]

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        return self._run(self._episode.call(name, arguments))  # type: ignore[no-any-return]

    def say(self, text: str) -> str | None:
        return self._run(self._episode.say(text))  # type: ignore[no-any-return]


def _wrap_sync(func: Callable[[Any], Any]) -> Agent:
    async def agent(episode: Episode) -> str | None:
        loop = asyncio.get_running_loop()
        facade = SyncEpisode(episode, loop)
        done: asyncio.Future[Any] = loop.create_future()

        def settle(outcome: Callable[[], None]) -> None:
            if not done.done():  # the trial may have ended (time limit) long ago
                outcome()

        def report(outcome: Callable[[], None]) -> None:
            with contextlib.suppress(RuntimeError):  # the run is over and its loop closed: nobody waits
                loop.call_soon_threadsafe(settle, outcome)

        def target() -> None:
            try:
                result = func(facade)
            except BaseException as exc:  # SystemExit too: it is the agent's failure, not the run's
                failure = exc if isinstance(exc, Exception) else AgentCrashed(
                    f"the agent raised {exc!r}\n{traceback.format_exc()}")
                report(lambda: done.set_exception(failure))
            else:
                report(lambda: done.set_result(result))

        # a daemon thread, not the loop's default executor: asyncio.run() waits for executor threads at
        # exit, so an agent that never returns kept the whole process (summary, gate, JUnit) from finishing
        threading.Thread(target=target, name=f"passhat-agent {episode.case_id}#{episode.trial}", daemon=True).start()
        try:
            result = await done
        finally:
            facade.closed = True
        return result if isinstance(result, str) else None

    return agent


def _import(target: str) -> Any:
    path = Path(target)
    if target.endswith(".py"):
        if not path.exists():
            raise PasshatError(f"agent file {target} does not exist")
        try:
            return import_file(path, "agent")
        except ImportError as exc:
            raise PasshatError(f"cannot import agent file {target}: {exc}") from exc
    try:
        return import_module(target)
    except ImportError as exc:
        raise PasshatError(f"cannot import agent module {target!r}: {exc}") from exc


def _split(spec: str) -> tuple[str, str]:
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise PasshatError(f"agent {spec!r}: expected module:function or path/to/file.py:function")
    return target, attr


def resolve_python_spec(spec: str) -> Any:
    """The object ``module:attr`` names (imported here, in the calling thread); errors name the spec."""
    target, attr = _split(spec)
    obj = getattr(_import(target), attr, None)
    if obj is None:
        raise PasshatError(f"agent {spec!r}: {target} has no attribute {attr!r}")
    return obj


def python_agent(spec: str) -> Agent:
    """Load ``module:attr``. The attribute is an (async) function of the episode, or a class whose
    instances are; a class is instantiated once per run with no arguments."""
    return as_agent(resolve_python_spec(spec), spec)


IMPORT_TIMEOUT_ENV = "PASSHAT_AGENT_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT_S = 60.0
"""How long importing an agent's module may take. Generous for heavy imports (torch, an SDK that reads
its config) on a slow machine, short next to a CI job: a module that waits at import time (for input, a
server, a lock) is bad input after this, not a run that hangs."""


def import_timeout() -> float:
    """The limit on importing an agent: ``$PASSHAT_AGENT_IMPORT_TIMEOUT`` seconds, or 60."""
    raw = os.environ.get(IMPORT_TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_IMPORT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise PasshatError(f"{IMPORT_TIMEOUT_ENV}={raw!r}: expected a number of seconds > 0")
    return value


async def import_agent(spec: str, timeout: float | None = None) -> Any:
    """:func:`resolve_python_spec` off the event loop, within ``timeout`` seconds (default :func:`import_timeout`).

    The import runs in a daemon thread, so the loop stays free — Ctrl-C and SIGTERM still stop the
    command — and a module that never finishes importing is bad input after the limit, not a run that
    hangs (the thread cannot be killed; it is abandoned, and ends with the process). Whatever the module
    does on import — raise, ``sys.exit()``, lack the attribute — is a :class:`PasshatError` naming the spec.
    """
    limit = import_timeout() if timeout is None else timeout
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not done.done():
            (done.set_result if ok else done.set_exception)(value)

    def target() -> None:
        try:
            value, ok = resolve_python_spec(spec), True
        except BaseException as exc:  # SystemExit and KeyboardInterrupt of the user's code too: it is bad input
            value, ok = (exc if isinstance(exc, PasshatError) else
                         PasshatError(f"agent {spec!r}: importing it raised {describe_failure(exc, None)}")), False
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (the command was stopped)
            loop.call_soon_threadsafe(settle, ok, value)

    threading.Thread(target=target, name=f"passhat-import {spec}", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.shield(done), limit)
    except TimeoutError:
        target_name = _split(spec)[0]
        raise PasshatError(f"agent {spec!r}: importing {target_name} did not finish within {limit:g} s — a module "
                           "that waits at import time (for input, a server, a lock, a loop) cannot be run; "
                           f"set {IMPORT_TIMEOUT_ENV}=SECONDS if it only needs longer") from None


def as_agent(obj: Any, name: str | None = None) -> Agent:
    """An agent from a Python object: an async function of the episode (used as is), a plain function
    (run in a thread with a :class:`SyncEpisode`), an instance with such a ``__call__``, or a class of
    those (instantiated once, with no arguments). ``name`` is how errors refer to it."""
    label = name or repr(obj)
    if inspect.isclass(obj):
        try:
            obj = obj()
        except (Exception, SystemExit) as exc:
            raise PasshatError(f"agent {label}: the class {obj.__qualname__} cannot be built with no arguments, as "
                               f"passhat builds it ({describe_failure(exc, None)}); give a function, an instance, "
                               "or a class whose __init__ needs no argument") from None
    if not callable(obj):
        raise PasshatError(f"agent {label} is not callable (it is {type(obj).__name__}); give an (async) function "
                           "of the episode, or a class or instance with such a __call__")
    call = obj if inspect.isfunction(obj) or inspect.ismethod(obj) else obj.__call__
    if inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(call):  # the first: functools.partial
        return obj  # type: ignore[no-any-return]
    return _wrap_sync(obj)
