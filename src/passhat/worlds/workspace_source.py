"""Workspace fixtures as a domain declares them, and where trial copies of them go.

``Domain(workspace=...)`` takes a folder, a :class:`GitTree` or an :class:`Overlay`; the workspace world
kind (``worlds/workspace.py``) captures it once per run and copies it per trial into :func:`copy_folder`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from passhat.errors import DomainError

SHM_COPY_LIMIT = 64 * 1024 * 1024
"""Workspaces up to this size are copied into ``/dev/shm`` (memory) when it exists and has room for 16
copies; larger ones, or a small ``/dev/shm`` (a container's default is 64 MB), go to disk."""


def copy_folder(size: int) -> Path | None:
    """Where trial copies of a workspace of ``size`` bytes go: ``PASSHAT_WORKSPACE_DIR`` if set, else
    ``/dev/shm`` for small trees, else the system's temporary folder (``None``)."""
    chosen = os.environ.get("PASSHAT_WORKSPACE_DIR")
    if chosen:
        folder = Path(chosen)
        if not folder.is_dir():
            raise DomainError(f"PASSHAT_WORKSPACE_DIR={chosen}: not a folder (workspace copies are made in it)")
        return folder
    shm = Path("/dev/shm")
    if size <= SHM_COPY_LIMIT and shm.is_dir() and os.access(shm, os.W_OK):
        free = os.statvfs(shm)
        if free.f_bavail * free.f_frsize >= 16 * size:  # room for many trials at once (a container's is 64 MB)
            return shm
    return None


@dataclass(frozen=True)
class GitTree:
    """A workspace fixture taken from a git repository at a commit: ``GitTree(Path("repo"), "v1.2")``."""

    repo: Path
    commit: str


@dataclass(frozen=True)
class Overlay:
    """A workspace fixture made of the folder ``base`` with the files of ``over`` laid on top (same path:
    replaced; new path: added). Variants of one repository — the same package with one bug planted —
    without a copy of the whole tree each: ``Overlay(HERE / "clean", HERE / "bugs" / "median")``."""

    base: Path
    over: Path


WorkspaceSource = Path | GitTree | Overlay
"""A workspace fixture: a directory (copied as it is when the run starts), a git tree at a commit, or a
directory with another laid over it."""
