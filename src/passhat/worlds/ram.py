"""Scratch space in RAM (``/dev/shm``) for what a world makes and deletes per trial: workspace copies,
a throwaway PostgreSQL cluster's databases. Making files is most of their cost, and on a disk file system
(ext4 without a journal above all, which skips every inode deleted in the last minutes) it is several
times dearer than on a tmpfs."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

RAM = Path("/dev/shm")


def in_ram(path: str | Path) -> bool:
    """Whether ``path`` is on a tmpfs: the mount holding it (the longest mount point above it) is one."""
    real, best, kind = os.path.realpath(path), "", ""
    with contextlib.suppress(OSError), open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 3:
                continue
            point = fields[1].replace("\\040", " ")
            if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                best, kind = point, fields[2]
    return kind == "tmpfs"


def ram_with_room(free_bytes: int) -> Path | None:
    """``/dev/shm`` when it is a tmpfs this process may write with at least ``free_bytes`` free, else ``None``."""
    if not in_ram(RAM) or not os.access(RAM, os.W_OK):
        return None
    try:
        found = os.statvfs(RAM)
    except OSError:
        return None
    return RAM if found.f_bavail * found.f_frsize >= free_bytes else None


__all__ = ["RAM", "in_ram", "ram_with_room"]
