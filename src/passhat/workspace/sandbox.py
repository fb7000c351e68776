"""Run a shell command in a workspace copy: time limit, scrubbed environment, bounded output, and —
where the machine allows — no network and no writes outside the copy.

Two isolation levels (:data:`Isolation`):

- ``unshare``: the command runs in new user, mount, PID, network and IPC namespaces (util-linux
  ``unshare``; no root, no daemon). The network namespace has only a loopback device, down: every
  connection fails, to the host's loopback too. In the mount namespace every mount is made read-only
  except the copy and the command's private HOME/TMPDIR, and the command runs with no capabilities,
  so it cannot undo that (see :mod:`passhat.sandbox`). Nothing it starts outlives it:
  its PID namespace dies with it.
- ``none``: the fallback where user namespaces are unavailable (disabled by the kernel or an
  AppArmor policy, no ``unshare``). Same environment scrub, time limit and output bound, but the
  command can reach the network and write anywhere the harness can; a background process that
  leaves the command's process group can outlive it. Results say ``isolation="none"`` so callers can
  report it.

:func:`isolation` tries the real thing once per process. Set ``PASSHAT_SANDBOX=none`` to force the
fallback, ``PASSHAT_SANDBOX=unshare`` to make its absence an error rather than a silent fallback.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import dataclasses
import functools
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, get_args

from passhat import sandbox as confinement
from passhat.sandbox.bounds import Bounded, Bounds, confine
from passhat.shutdown import at_hard_exit
from passhat.workspace import _fs
from passhat.workspace.bounds import WorkspaceBounds, folder_bytes
from passhat.workspace.errors import WorkspaceError
from passhat.workspace.paths import inside

Isolation = confinement.Available
SANDBOX_ENV = confinement.SANDBOX_ENV

_SETUP_FAILED = confinement.SETUP_FAILED
MB = 1024 * 1024
_DRAIN_GRACE_S = 1.0  # after the command ends, how long to wait for its output pipes to close


@dataclass(frozen=True)
class CommandResult:
    """What one command did."""

    command: str
    """The shell command, as given."""
    exit_code: int | None
    """Its exit status (128 + N when killed by signal N, as a shell reports it); ``None`` when it was
    killed at the time limit."""
    timed_out: bool
    """It was still running at the time limit and was killed with all it had started."""
    stdout: str
    """Standard output, UTF-8 with replacement, cut after ``max_output`` bytes with a visible marker."""
    stderr: str
    """Standard error, likewise."""
    truncated: bool
    """Either stream was cut."""
    seconds: float
    """Wall time from start to exit, sandbox set-up included."""
    isolation: Isolation
    """How the command was confined (``none``: no network or write confinement)."""
    exceeded: str | None = None
    """The workspace bound the command ran into, in words (``None``: none): see :class:`WorkspaceBounds`."""

    @property
    def ok(self) -> bool:
        """Exited 0 within the time limit."""
        return self.exit_code == 0 and not self.timed_out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_json` reads it back."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CommandResult:
        """The result :meth:`to_json` wrote."""
        try:
            return cls(**data)
        except TypeError as exc:
            raise WorkspaceError(f"command result: {exc}") from exc


_probe = confinement.probe  # the shared probe (tests clear its cache)


def isolation() -> Isolation:
    """The isolation this machine offers (probed once per process), or what ``PASSHAT_SANDBOX`` forces."""
    try:
        return confinement.available()
    except confinement.SandboxError as exc:
        raise WorkspaceError(str(exc)) from None


def isolation_note() -> str:
    """Why :func:`isolation` is what it is, in one line for a report."""
    return confinement.available_note()


def _environment(private: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The whole environment of a command: nothing of the harness's leaks in (API keys, tokens)."""
    env = {
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": os.path.join(private, "home"),
        "TMPDIR": os.path.join(private, "tmp"),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }
    for key, value in (extra or {}).items():
        if not isinstance(key, str) or not isinstance(value, str) or not key or "=" in key or "\x00" in key + value:
            valid = "a string name without '=' and a string value, without NUL"
            raise WorkspaceError(f"command environment: {key!r}={value!r} is not a valid variable ({valid})")
        env[key] = value
    return env


class _Capture:
    """The first ``limit`` bytes of a stream, and a count of the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(1 << 16):
            room = max(self.limit - len(self.data), 0)
            self.data += chunk[:room]
            self.dropped += max(len(chunk) - room, 0)

    def text(self) -> str:
        if not self.dropped:
            return self.data.decode("utf-8", "replace")
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text = decoder.decode(bytes(self.data), final=False)  # a character cut at the limit is dropped whole
        hidden = self.dropped + len(decoder.getstate()[0])
        return f"{text}\n… [truncated {hidden:,} bytes]"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def run_command(root: Path, command: str, *, timeout_s: float, max_output: int = 64 * 1024,
                      env: Mapping[str, str] | None = None, sandbox: Isolation | None = None,
                      cwd: str = ".", bounds: WorkspaceBounds | None = None) -> CommandResult:
    """Run ``/bin/sh -c command`` in the folder ``root`` and return what it did.

    The environment is only ``PATH`` (the harness interpreter's folder first, so ``python`` and
    ``pytest`` are ours), ``HOME`` and ``TMPDIR`` in a private folder removed afterwards (not the
    workspace, so they do not show in its diff), ``LANG=C.UTF-8``, ``PYTHONDONTWRITEBYTECODE=1``,
    ``PYTHONHASHSEED=0``, and ``env``. The command runs in its own session; at ``timeout_s`` its whole
    process group is killed. Output is read as it comes, keeping the first ``max_output`` bytes of
    each stream. ``sandbox`` overrides :func:`isolation` for this call (``unshare`` where unavailable
    is an error). ``cwd`` is the working folder relative to ``root`` (the whole of ``root`` stays
    writable; give the copy's root as ``root``, not a folder inside it). ``bounds`` (under ``unshare``) are the
    copy's disk, process and memory bounds; the result's ``exceeded`` names the one the command ran into.
    """
    _fs.check_dir(str(root), "workspace folder")
    where = str(inside(root, cwd))
    _fs.check_dir(where, "command working folder")
    if not timeout_s > 0:
        raise WorkspaceError(f"command time limit must be positive seconds, not {timeout_s!r}")
    if max_output < 0:
        raise WorkspaceError(f"max_output must be zero or more bytes, not {max_output!r}")
    mode: Isolation = isolation() if sandbox is None else sandbox
    if mode not in get_args(Isolation):
        raise WorkspaceError(f"sandbox {mode!r} is not one of {', '.join(get_args(Isolation))}")
    if mode == "unshare" and _probe()[0] != "unshare":
        raise WorkspaceError(f"sandbox 'unshare' is not available on this machine: {_probe()[1]}")
    private = tempfile.mkdtemp(prefix="passhat-cmd-")
    bounded: Bounded | None = None
    try:
        environment = _environment(private, env)
        os.mkdir(environment["HOME"])
        os.mkdir(environment["TMPDIR"])
        if mode == "unshare":
            spec = confinement.base_spec(["/bin/sh", "-c", command], where, [os.path.realpath(root), private])
            if bounds is not None:
                bounded = await asyncio.to_thread(_bound, spec, bounds, str(root))
            try:
                argv = confinement.launch_argv(spec)
            except confinement.SandboxError as exc:
                raise WorkspaceError(str(exc)) from None
        else:
            argv = ["/bin/sh", "-c", command]
        result = await _run(argv, where, environment, command, timeout_s, max_output, mode)
        if bounds is not None and bounded is not None:
            exceeded = await asyncio.to_thread(_exceeded, result, bounds, str(root), bounded)
            if exceeded:
                result = dataclasses.replace(result, exceeded=exceeded)
        return result
    finally:
        try:
            if bounded is not None:
                await bounded.release_in_thread()
        finally:  # the private folder goes even when the command is cancelled meanwhile (a run stopped)
            try:
                _fs.remove_tree(private)
            except OSError:
                pass  # something the command left running (isolation "none") still writes there; a temp dir is left


def _bound(spec: confinement.Spec, bounds: WorkspaceBounds, root: str) -> Bounded:
    """Put ``bounds`` in the command's spec (:func:`passhat.sandbox.bounds.confine`): no file may grow past
    what is left of the copy's disk bound."""
    disk = max(bounds.disk_mb * MB - folder_bytes(root), 0) if bounds.disk_mb is not None else None
    memory = bounds.memory_mb * MB if bounds.memory_mb is not None else None
    return confine(spec, Bounds(processes=bounds.processes, memory_bytes=memory, file_bytes=disk))


def _exceeded(result: CommandResult, bounds: WorkspaceBounds, root: str, bounded: Bounded) -> str | None:
    hit = bounded.hit(result.exit_code, result.stderr)
    if bounds.disk_mb is not None and ("file_size" in hit or folder_bytes(root) > bounds.disk_mb * MB):
        return f"the command exceeded the workspace's {bounds.disk_mb} MB disk bound"
    if "processes" in hit:
        return f"the command exceeded the workspace's bound of {bounds.processes} processes"
    if "memory" in hit:
        return f"the command exceeded the workspace's {bounds.memory_mb} MB memory bound"
    return None


async def _run(argv: list[str], cwd: str, env: dict[str, str], command: str, timeout_s: float, max_output: int,
               mode: Isolation) -> CommandResult:
    start = time.perf_counter()
    try:
        proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    start_new_session=True)
    except OSError as exc:
        raise WorkspaceError(f"{cwd}: cannot start the command: {_fs.describe(exc)}") from exc
    # a stop that cannot wait for this trial (passhat.shutdown's hard exit) still kills the command's group
    forget = at_hard_exit(functools.partial(_kill_group, proc.pid))
    out, err = _Capture(max_output), _Capture(max_output)
    assert proc.stdout is not None and proc.stderr is not None
    readers = asyncio.ensure_future(asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr)))
    # a gather cancelled below ends with a CancelledError set as its exception: retrieve it, or asyncio logs
    # "exception was never retrieved" with a traceback for every command a time limit cut short
    readers.add_done_callback(lambda f: f.cancelled() or f.exception())
    timed_out = finished = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
        finally:
            if timed_out or mode == "none" or proc.returncode is None:
                # at the limit, on cancellation, and after a normal exit without a PID namespace (whatever
                # it left in its group); with one, the kernel already killed everything left in it
                _kill_group(proc.pid)
        await proc.wait()
        seconds = time.perf_counter() - start
        try:
            await asyncio.wait_for(asyncio.shield(readers), _DRAIN_GRACE_S)
        except TimeoutError:
            pass  # a process that left the group still holds a pipe open (isolation "none" only)
        finished = True
    finally:
        if not finished:  # cancelled (a trial's time limit, Ctrl-C): reap what was just killed and let its pipes
            # reach their end on this loop, or its transport is closed after the loop is and says so on stderr
            ending: list[asyncio.Future[Any]] = [asyncio.ensure_future(proc.wait()), readers]
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(ending, timeout=_DRAIN_GRACE_S)
        readers.cancel()
        forget()
    code = proc.returncode
    if code is not None and code < 0:
        code = 128 - code
    if mode == "unshare" and code == _SETUP_FAILED and err.data.startswith(b"passhat sandbox:"):
        raise WorkspaceError(f"{cwd}: {err.text().strip()}")
    return CommandResult(command=command, exit_code=None if timed_out else code, timed_out=timed_out,
                         stdout=out.text(), stderr=err.text(), truncated=bool(out.dropped or err.dropped),
                         seconds=seconds, isolation=mode)
