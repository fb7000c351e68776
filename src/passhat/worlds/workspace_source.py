"""Workspace fixtures as a domain declares them, and where trial copies of them go.

``Domain(workspace=...)`` takes a folder, a :class:`GitTree` or an :class:`Overlay`; the workspace world
kind (``worlds/workspace.py``) captures it once per run and copies it per trial into :func:`copy_folder`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from passhat import sandbox, shutdown
from passhat.errors import DomainError
from passhat.worlds.ram import ram_with_room

SHM_COPY_LIMIT = 64 * 1024 * 1024
"""Workspaces up to this size are copied into ``/dev/shm`` (memory) when it exists and has room for 16
copies; larger ones, or a small ``/dev/shm`` (a container's default is 64 MB), go to disk."""


_parents: dict[str, Path] = {}


def copy_folder(size: int) -> Path:
    """Where trial copies of a workspace of ``size`` bytes go: a private folder (0700, ``passhat-copies-*``) of
    this process in ``PASSHAT_WORKSPACE_DIR`` if set, else in ``/dev/shm`` for small trees, else in the system's
    temporary folder. Private, and hidden from every sandbox (:func:`passhat.sandbox.hide`): no other user and
    no agent's program can reach a copy but through its tools."""
    chosen = os.environ.get("PASSHAT_WORKSPACE_DIR")
    base: Path | None = None
    if chosen:
        base = Path(chosen)
        if not base.is_dir():
            raise DomainError(f"PASSHAT_WORKSPACE_DIR={chosen}: not a folder (workspace copies are made in it)")
    else:
        if size <= SHM_COPY_LIMIT:
            base = ram_with_room(16 * size)  # room for many trials at once (a container's is 64 MB)
    return _private_parent(base if base is not None else Path(tempfile.gettempdir()))


def _private_parent(base: Path) -> Path:
    key = f"{os.getpid()}:{base}"  # a forked worker (Ray) makes its own
    parent = _parents.get(key)
    if parent is None or not parent.is_dir():
        _remove_stale_parents(base)
        parent = Path(tempfile.mkdtemp(prefix="passhat-copies-", dir=base))
        _parents[key] = parent
        sandbox.hide(parent)
        atexit.register(_remove_if_empty, parent)  # each copy is removed with its trial; the folder then
        shutdown.at_hard_exit(lambda: shutil.rmtree(parent, ignore_errors=True))  # a hard exit skips both
    return parent


STALE_S = 3600.0
"""An empty ``passhat-copies-*`` folder untouched this long is a killed process's (SIGKILL skips atexit)."""


def _remove_stale_parents(base: Path) -> None:
    """Remove the empty copy folders processes killed outright left in ``base``. Only empty ones can go
    (``rmdir``), and a live process whose folder went makes a new one (:func:`_private_parent` checks)."""
    with contextlib.suppress(OSError):
        for folder in base.glob("passhat-copies-*"):
            with contextlib.suppress(OSError):
                if time.time() - folder.stat().st_mtime > STALE_S:
                    folder.rmdir()


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


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
