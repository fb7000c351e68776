"""What one workspace copy's commands may take: disk, processes, memory (docs/workspace.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from passhat.workspace.errors import WorkspaceError


@dataclass(frozen=True)
class WorkspaceBounds:
    """Per copy, for every command run in it (``Domain(workspace_bounds=...)``); ``None`` lifts a bound.

    A command past a bound ends with a tool error naming it (``run_command: the command exceeded the
    workspace's 256 MB disk bound``), not a mystery exit status.
    """

    disk_mb: int | None = 256
    """Bytes the copy may hold, in MB: no file may grow past what is left (``RLIMIT_FSIZE``), and the copy is
    measured after each command. Copies live in memory (``/dev/shm``) when they are small: this is RAM."""
    processes: int | None = 256
    """Processes and threads a command may have at once (a pids cgroup, else ``RLIMIT_NPROC``): a fork bomb
    stops here."""
    memory_mb: int | None = 1024
    """Memory a command may use, in MB (a memory cgroup, else ``RLIMIT_DATA``: each process's private memory)."""

    def __post_init__(self) -> None:
        for name in ("disk_mb", "processes", "memory_mb"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise WorkspaceError(f"workspace_bounds.{name}: {value!r} is not a whole number ≥ 1 (or None: no bound)")


def folder_bytes(root: str) -> int:
    """Bytes the files under ``root`` hold (blocks allocated, so a sparse file counts what it uses)."""
    total = 0
    for folder, dirs, files in os.walk(root):
        for name in [*files, *dirs]:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass
    return total


__all__ = ["WorkspaceBounds", "folder_bytes"]
