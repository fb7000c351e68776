"""Bounds on what one confined program may take: processes and memory (a cgroup, else rlimits), disk.

A pids and a memory cgroup are made per program where passhat may (cgroup v1 hierarchies it can write,
as root in a container); the program's PID 1 joins them before anything else runs
(:mod:`passhat.sandbox._init`), and afterwards their counters say which bound was hit. Elsewhere the
same bounds are rlimits: ``RLIMIT_NPROC`` (counted in the program's own user namespace; it never binds
root, hence the cgroup first) and ``RLIMIT_AS``. Disk is ``RLIMIT_FSIZE`` (no file may grow past what
is left) plus the caller's measure of the folder afterwards.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import signal

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
        made: dict[str, str] = {}
        name = f"passhat-{os.getpid()}-{secrets.token_hex(4)}"
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

    def exceeded(self) -> set[str]:
        """``processes`` and/or ``memory``: the bounds the program ran into."""
        hit = set()
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
                import time

                time.sleep(0.01)


__all__ = ["Cgroups"]
