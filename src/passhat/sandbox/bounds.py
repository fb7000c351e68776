"""Bounds on what one confined program may take: processes, memory, file size (docs/design/021).

One :func:`confine` puts :class:`Bounds` into a program's spec (:func:`passhat.sandbox.base_spec`), for
workspace commands (:mod:`passhat.workspace.sandbox`) and agents (:mod:`passhat.agents.confined`) alike;
the :class:`Bounded` it returns says afterwards which bound the program ran into, and kills what is left.

A pids and a memory cgroup are made per program where passhat may (cgroup v1 hierarchies it can write,
as root in a container); the program's PID 1 joins them before anything else runs
(:mod:`passhat.sandbox._init`), so the bound holds for the whole tree, and afterwards their counters say
which bound was hit. Elsewhere the same bounds are rlimits, per process: ``RLIMIT_NPROC`` (counted per
user: in a fresh user namespace, that namespace's; outside one, every process of the program's user, so
it is set to what that user runs already plus the bound; it never binds root, hence the cgroup first)
and ``RLIMIT_DATA`` — not ``RLIMIT_AS``: address space is not memory, and Node reserves some 11 GB of it
for WebAssembly, which its own ``fetch`` uses (measured: ``fetch`` dies under an ``RLIMIT_AS`` of 8 GiB,
works under an ``RLIMIT_DATA`` of 2 GiB). File size is ``RLIMIT_FSIZE`` (the kernel answers ``EFBIG`` or
``SIGXFSZ`` past it).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import signal
import time
from dataclasses import dataclass, field
from typing import Literal

from passhat.sandbox.plan import Spec

Bound = Literal["processes", "memory", "file_size"]
"""A bound a program can run into."""
V1 = "/sys/fs/cgroup"


@functools.cache
def _own_v1_paths() -> dict[str, str]:
    """controller → this process's cgroup folder in its v1 hierarchy (``{}`` when there is none)."""
    found = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for controller in controllers.split(","):
                    if controller in ("pids", "memory") and os.path.isdir(os.path.join(V1, controller)):
                        found[controller] = os.path.join(V1, controller, path.lstrip("/"))
    except OSError:
        pass
    return found


class Cgroups:
    """The pids and memory cgroups of one program; :meth:`make` gives ``None`` where they cannot be made."""

    def __init__(self, folders: dict[str, str]) -> None:
        self.folders = folders

    @classmethod
    def make(cls, processes: int | None, memory_bytes: int | None) -> Cgroups | None:
        wanted = {"pids": ("pids.max", processes), "memory": ("memory.limit_in_bytes", memory_bytes)}
        wanted = {k: v for k, v in wanted.items() if v[1] is not None}
        own = _own_v1_paths()
        if not wanted or not all(k in own for k in wanted):
            return None
        _remove_stale(tuple(own[k] for k in wanted))
        made: dict[str, str] = {}
        name = f"passhat-{_pid_namespace()}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            for controller, (file, value) in wanted.items():
                folder = os.path.join(own[controller], name)
                os.mkdir(folder)
                made[controller] = folder
                with open(os.path.join(folder, file), "w") as f:
                    f.write(str(value))
                if controller == "memory":
                    with contextlib.suppress(OSError), open(os.path.join(folder, "memory.memsw.limit_in_bytes"), "w") as f:
                        f.write(str(value))  # swap counted too, where the kernel accounts it
        except OSError:
            cls(made).remove()
            return None
        return cls(made)

    def exceeded(self) -> set[Bound]:
        """``processes`` and/or ``memory``: the bounds the program ran into."""
        hit: set[Bound] = set()
        with contextlib.suppress(OSError, ValueError):
            if "pids" in self.folders:
                with open(os.path.join(self.folders["pids"], "pids.events")) as f:
                    if any(line.split()[0] == "max" and int(line.split()[1]) > 0 for line in f if line.strip()):
                        hit.add("processes")
        with contextlib.suppress(OSError, ValueError):
            if "memory" in self.folders:
                def read(name: str) -> str:
                    with open(os.path.join(self.folders["memory"], name)) as f:
                        return f.read()

                killed = any(line.split() == ["oom_kill", n] and n != "0" for line in read("memory.oom_control").splitlines()
                             for n in line.split()[1:2])
                if killed or int(read("memory.failcnt")) > 0 or \
                        int(read("memory.max_usage_in_bytes")) >= int(read("memory.limit_in_bytes")):
                    hit.add("memory")
        return hit

    def remove(self) -> None:
        """Kill whatever is still in them, then remove them."""
        for folder in self.folders.values():
            for _ in range(50):
                try:
                    with open(os.path.join(folder, "cgroup.procs")) as f:
                        pids = [int(p) for p in f.read().split()]
                except OSError:
                    break
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
                    break
                time.sleep(0.01)


_NAME = re.compile(r"passhat-(\d+)-(\d+)-[0-9a-f]{8}")
"""A cgroup's name: its maker's PID namespace (the inode of ``/proc/self/ns/pid``), pid, a random part."""


@functools.cache
def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


@functools.cache
def _remove_stale(parents: tuple[str, ...]) -> None:
    """Once per process: remove the cgroups a harness killed outright left behind (their maker, named by
    its pid and PID namespace, is gone), killing what is still in them: their program should have died with
    its run. Another namespace's cgroups (a harness in another container) are left alone: its pids are not ours."""
    for parent in parents:
        with contextlib.suppress(OSError):
            for entry in os.listdir(parent):
                found = _NAME.fullmatch(entry)
                if found is not None and int(found[1]) == _pid_namespace() and not pid_alive(int(found[2])):
                    Cgroups({"stale": os.path.join(parent, entry)}).remove()


def pid_alive(pid: int) -> bool:
    """A process with this pid exists (it may be another user's: then it is alive too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Bounds:
    """What one confined program may take; ``None`` lifts a bound. The callers check the values (each
    names its own option); here they are only applied."""

    processes: int | None = None
    """Processes and threads at once (the sandbox's own PID 1 and its threads count too)."""
    memory_bytes: int | None = None
    """Memory: the whole tree's (a cgroup), else each process's private writable memory (``RLIMIT_DATA``)."""
    file_bytes: int | None = None
    """The size any one file the program writes may reach (``RLIMIT_FSIZE``)."""


_XFSZ = 128 + signal.SIGXFSZ
_NO_PROCESS = ("Resource temporarily unavailable", "Cannot fork", "can't fork", "can't start new thread", "EAGAIN")
_NO_MEMORY = ("MemoryError", "Cannot allocate memory", "out of memory", "std::bad_alloc", "ENOMEM")
_TOO_LARGE = "File too large"  # strerror(EFBIG): a program that ignores SIGXFSZ, as Python does, sees this



@dataclass
class Bounded:
    """The bounds one program runs under and how each is enforced; :meth:`release` when it has ended."""

    bounds: Bounds
    cgroups: Cgroups | None = None
    enforced: dict[Bound, str] = field(default_factory=dict)
    """How each bound is enforced, in words (``pids cgroup``, ``RLIMIT_DATA per process``); a bound asked
    for but missing here could not be enforced on this machine (see :meth:`describe`)."""

    def hit(self, exit_code: int | None, stderr: str) -> set[Bound]:
        """The bounds the program ran into: the cgroups' counters where there are cgroups, else what the
        failure looks like (a status, an error message on stderr). ``exit_code``: the program's status,
        128 + N or -N for signal N, ``None`` when it did not exit by itself."""
        if exit_code is not None and exit_code < 0:
            exit_code = 128 - exit_code
        failed = exit_code not in (0, None)
        found: set[Bound] = set()
        if self.cgroups is not None:
            found |= self.cgroups.exceeded()
        elif failed:
            if self.bounds.processes is not None and any(s in stderr for s in _NO_PROCESS):
                found.add("processes")
            if self.bounds.memory_bytes is not None and any(s in stderr for s in _NO_MEMORY):
                found.add("memory")
        if self.bounds.file_bytes is not None and (exit_code == _XFSZ or _TOO_LARGE in stderr):
            found.add("file_size")
        return found

    def describe(self) -> str:
        """The bounds in words, each with how it is enforced: ``256 processes (pids cgroup), ...``."""
        parts = []
        named: tuple[tuple[Bound, int | None], ...] = (("processes", self.bounds.processes),
                                                       ("memory", self.bounds.memory_bytes),
                                                       ("file_size", self.bounds.file_bytes))
        for bound, value in named:
            if value is None:
                continue
            what = {"processes": f"{value} processes", "memory": f"{format_size(value)} of memory",
                    "file_size": f"{format_size(value)} per file"}[bound]
            parts.append(f"{what} ({self.enforced.get(bound, 'not enforced here: root without a cgroup')})")
        return ", ".join(parts) or "none"

    def release(self) -> None:
        """Kill whatever is left in the cgroups and remove them (blocking: up to half a second)."""
        if self.cgroups is not None:
            self.cgroups.remove()

    async def release_in_thread(self) -> None:
        """:meth:`release` in a thread, carried to its end even when the caller is cancelled meanwhile (a run
        stopped mid-command: that is exactly when what the program left must still be killed); the
        cancellation is passed on once it is done."""
        import asyncio

        job = asyncio.ensure_future(asyncio.to_thread(self.release))
        cancelled = False
        while not job.done():
            try:
                await asyncio.shield(job)
            except asyncio.CancelledError:
                cancelled = True
        job.result()
        if cancelled:
            raise asyncio.CancelledError


def confine(spec: Spec, bounds: Bounds) -> Bounded:
    """Put ``bounds`` into ``spec`` (its ``mode`` and ``uid`` already set): a pids and a memory cgroup where
    both can be made, else rlimits; the file size always. Blocking (cgroup files, ``/proc``): call it in a
    thread from a loop."""
    done = Bounded(bounds)
    limits = spec.limits
    if bounds.file_bytes is not None:
        limits["fsize"] = bounds.file_bytes
        done.enforced["file_size"] = "RLIMIT_FSIZE"
    if bounds.processes is None and bounds.memory_bytes is None:
        return done
    done.cgroups = Cgroups.make(bounds.processes, bounds.memory_bytes)
    if done.cgroups is not None:
        spec.cgroups = list(done.cgroups.folders.values())
        done.enforced.update({"processes": "pids cgroup", "memory": "memory cgroup"})
        return done
    if bounds.processes is not None:
        nproc = _nproc(bounds.processes, spec.mode == "namespaces", spec.uid)
        if nproc is not None:
            limits["nproc"] = nproc
            done.enforced["processes"] = "RLIMIT_NPROC" if nproc == bounds.processes else \
                f"RLIMIT_NPROC: {nproc}, this user's processes at the start plus the bound"
    if bounds.memory_bytes is not None:
        limits["data"] = bounds.memory_bytes
        done.enforced["memory"] = "RLIMIT_DATA per process"
    return done


def _nproc(bound: int, namespaces: bool, uid: int | None) -> int | None:
    """The ``RLIMIT_NPROC`` that lets the program have ``bound`` processes; ``None`` when it would not bind
    (the kernel never counts the global root user's processes, mapped into a namespace or not)."""
    real = os.getuid() if namespaces or uid is None else uid
    if real == 0:
        return None
    if namespaces:
        return bound  # counted in the program's own user namespace: nothing else is in it
    return _tasks_of(real) + bound


def _tasks_of(uid: int) -> int:
    """Processes and threads whose real uid is ``uid`` (what ``RLIMIT_NPROC`` counts outside a namespace)."""
    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{pid}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
            if int(status["Uid"].split()[0]) == uid:
                count += int(status["Threads"])
    return count


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?) *([kmgt]?)(?:i?b)?", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``512M``, ``2G``, ``1.5GiB``, ``4096`` → bytes: units binary, as ``docker -m`` and ``ulimit`` read
    them (``K``/``M``/``G``/``T``, alone or followed by ``B`` or ``iB``, any case); a plain number is bytes.
    Raises :class:`ValueError` saying what was expected (the caller names its option)."""
    found = _SIZE.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"{text!r} is not a size: expected a number with an optional unit K, M, G or T "
                         "(binary: 1K = 1024 bytes), e.g. 512M or 2G")
    return int(float(found[1]) * _UNITS[found[2].lower()])


def format_size(n: int) -> str:
    """Bytes in the largest binary unit that keeps them whole, or one decimal: ``2 GiB``, ``1.5 GiB``, ``100 B``."""
    units = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
    for unit, size in units:
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    for unit, size in units:
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


__all__ = ["Bound", "Bounded", "Bounds", "Cgroups", "confine", "format_size", "parse_size"]
