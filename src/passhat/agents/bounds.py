"""What an agent's program may take: processes, memory, file size (``--agent-processes``, ``--agent-memory``,
``--agent-file-size``; docs/agents.md, docs/design/021).

Bounds on a ``cmd:`` agent or an ``--isolate process`` worker keep one runaway — a fork bomb, a leak, a
log written without end — from taking the machine that runs the evaluation, and fail *its* trial with the
bound named. The defaults are set where a real agent never is: an SDK-based agent is an interpreter (Node 20
starts 7 threads, Python a handful), a model client and perhaps a subprocess or two, some 50–300 MB resident;

- 256 processes and threads: ten such agents' worth, and a fork bomb stops within milliseconds;
- 2 GiB of memory: several times a busy agent's peak, and ``-j 4`` such trials fit in 8 GiB (without a
  cgroup it is ``RLIMIT_DATA`` per process, which an interpreter's reserved-but-unused address space does
  not count against);
- 1 GiB per file: far past any log or download an agent needs, and small next to the temporary folder
  its private ``HOME``/``TMPDIR`` live in, which is often RAM (``tmpfs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from passhat.errors import PasshatError
from passhat.sandbox.bounds import Bound, Bounds, format_size, parse_size

DEFAULT_PROCESSES = 256
"""``--agent-processes``: processes and threads an agent's program may have at once."""
DEFAULT_MEMORY = "2G"
"""``--agent-memory``: memory its whole tree may use (per process where there is no cgroup)."""
DEFAULT_FILE_SIZE = "1G"
"""``--agent-file-size``: the size any one file it writes may reach."""
MIN_PROCESSES = 8
"""Fewer cannot run a program at all: the sandbox's PID 1 and its forwarding threads count too."""
MIN_MEMORY = 16 << 20
"""Less cannot start an interpreter beside the sandbox's PID 1 (a bare number is bytes: ``--agent-memory 2048``
is a mistake for ``2048M``, and is told so)."""

OPTIONS: dict[Bound, str] = {"processes": "--agent-processes", "memory": "--agent-memory",
                             "file_size": "--agent-file-size"}
"""The option that sets each bound, named in its errors and in the failure of a trial that reached it."""
NO_BOUND = "none"
"""What lifts a bound on the command line (``None`` from Python)."""


@dataclass(frozen=True)
class AgentBounds:
    """The bounds of every ``cmd:`` and ``--isolate process`` agent's program in a run; ``None`` lifts one."""

    processes: int | None = DEFAULT_PROCESSES
    """Processes and threads at once (a pids cgroup, else ``RLIMIT_NPROC``)."""
    memory: int | None = parse_size(DEFAULT_MEMORY)
    """Bytes of memory (a memory cgroup for the whole tree, else ``RLIMIT_DATA`` per process)."""
    file_size: int | None = parse_size(DEFAULT_FILE_SIZE)
    """Bytes any one file may reach (``RLIMIT_FSIZE``)."""

    def __post_init__(self) -> None:
        least_of: tuple[tuple[Bound, int], ...] = (("processes", MIN_PROCESSES), ("memory", MIN_MEMORY), ("file_size", 1))
        for bound, least in least_of:
            value = getattr(self, bound)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise PasshatError(f"{OPTIONS[bound]} {value!r}: expected a whole number (or {NO_BOUND!r}: no bound)")
            if value < least:
                raise PasshatError(f"{OPTIONS[bound]} {value!r}: {_too_small(bound, value, least)}")

    @classmethod
    def parse(cls, processes: int | str | None = DEFAULT_PROCESSES, memory: int | str | None = DEFAULT_MEMORY,
              file_size: int | str | None = DEFAULT_FILE_SIZE) -> AgentBounds:
        """The bounds as the options give them: a number of processes, sizes such as ``512M`` or bytes, or
        ``none``; raises :class:`PasshatError` naming the option and what would be valid."""
        return cls(processes=_count(processes), memory=_size("memory", memory), file_size=_size("file_size", file_size))

    def to_bounds(self) -> Bounds:
        """What :func:`passhat.sandbox.bounds.confine` applies."""
        return Bounds(processes=self.processes, memory_bytes=self.memory, file_bytes=self.file_size)

    def describe(self) -> dict[str, Any]:
        """For the manifest (``agent_runtime.sandbox.bounds``): ``None`` where a bound is lifted."""
        return {"processes": self.processes, "memory_bytes": self.memory, "file_size_bytes": self.file_size}

    def failure(self, hit: set[Bound]) -> str | None:
        """The reason a trial whose program reached ``hit`` failed, each bound with its option; ``None``: none."""
        said = []
        if "processes" in hit:
            said.append(f"the agent's processes reached their bound of {self.processes} ({OPTIONS['processes']})")
        if "memory" in hit and self.memory is not None:
            said.append(f"the agent reached its memory bound of {format_size(self.memory)} ({OPTIONS['memory']})")
        if "file_size" in hit and self.file_size is not None:
            said.append(f"a file the agent wrote reached its size bound of {format_size(self.file_size)} "
                        f"({OPTIONS['file_size']})")
        return "; ".join(said) or None


def _too_small(bound: Bound, value: int, least: int) -> str:
    if bound == "processes":
        return f"must be at least {least} (the sandbox's own first process and its threads count too)"
    if bound == "memory":
        hint = f"; did you mean {value}M?" if value < 1 << 20 else ""
        return f"must be at least {format_size(least)} (a bare number is bytes){hint}"
    return "must be at least 1 byte (a bare number is bytes; e.g. 1G)"


def _count(value: int | str | None) -> int | None:
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == NO_BOUND:
            return None
        if not text.isdigit():
            raise PasshatError(f"{OPTIONS['processes']} {value!r}: expected a whole number of processes, e.g. "
                               f"{DEFAULT_PROCESSES} (or {NO_BOUND!r}: no bound)")
        return int(text)
    return value


def _size(bound: Bound, value: int | str | None) -> int | None:
    if not isinstance(value, str):
        return value
    if value.strip().lower() == NO_BOUND:
        return None
    try:
        return parse_size(value)
    except ValueError as exc:
        raise PasshatError(f"{OPTIONS[bound]} {exc} (or {NO_BOUND!r}: no bound)") from None


__all__ = ["DEFAULT_FILE_SIZE", "DEFAULT_MEMORY", "DEFAULT_PROCESSES", "AgentBounds"]
