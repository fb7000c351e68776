"""Private copies of a fixture image, one per live world, within a memory budget.

Each live world needs a database of its own: trials run concurrently and must not see each other's
writes. A copy in memory (``deserialize``) is fastest, but costs the image's size each, so at ``-j 32``
and a 100 MB fixture a run held 32 copies (3.4 GB). Here copies are held in memory only while their
total stays within ``memory_budget``; further copies are files in a private temporary folder, opened
with SQLite's own small page cache, so memory no longer grows with concurrency × fixture size (disk
does, and the OS page cache holds what is hot). Both kinds start byte-identical to the image.

Rejected: one shared database for all trials (no isolation between concurrent writers); bounding the
number of live worlds (trials would queue behind each other and ``-j`` would no longer mean what the
user asked for); SQLite's read-only ``deserialize`` of one shared buffer (not exposed by ``sqlite3``,
and the trial writes anyway).
"""

from __future__ import annotations

import itertools
import os
import shutil
import sqlite3
import tempfile
import threading
import weakref
from pathlib import Path

DEFAULT_MEMORY_BUDGET = 256 * 1024 * 1024
"""Bytes of in-memory world copies per image; copies beyond it are file-backed."""


class ImageCopies:
    """Makes and discards the private copies of one serialized image."""

    def __init__(self, image: bytes, memory_budget: int | None = None) -> None:
        self.image = image
        self.memory_budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget
        self._files: dict[sqlite3.Connection, Path] = {}
        self._in_memory = 0
        self._folder: Path | None = None
        self._base: Path | None = None
        self._names = itertools.count()
        self._lock = threading.Lock()
        self.made = 0
        """How many copies were made in all (each one is a full copy of the image)."""

    @property
    def in_memory(self) -> int:
        """How many copies are held in memory now."""
        return self._in_memory

    @property
    def on_disk(self) -> int:
        """How many copies are file-backed now."""
        return len(self._files)

    def open(self) -> sqlite3.Connection:
        """A writable connection to a new private copy (in memory while the budget allows)."""
        with self._lock:
            use_memory = (self._in_memory + 1) * len(self.image) <= self.memory_budget
            self.made += 1
            if use_memory:
                self._in_memory += 1
            else:
                path = self._new_path()
        if use_memory:
            conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            conn.deserialize(self.image)
        else:
            copy_file(self._base_file(), path)
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            # a scratch file of one connection: no durability to pay for, no other process to lock out
            conn.execute("PRAGMA journal_mode = MEMORY")
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            with self._lock:
                self._files[conn] = path
        conn.row_factory = sqlite3.Row
        return conn

    def discard(self, conn: sqlite3.Connection) -> None:
        """Close a copy and free its memory or delete its file."""
        conn.close()
        with self._lock:
            path = self._files.pop(conn, None)
            if path is None:
                self._in_memory -= 1
        if path is not None:
            path.unlink(missing_ok=True)

    def _new_path(self) -> Path:
        """Where the next file-backed copy goes (called with the lock held)."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="passhat-worlds-"))
            weakref.finalize(self, shutil.rmtree, self._folder, ignore_errors=True)
        return self._folder / f"world-{next(self._names)}.sqlite"

    def _base_file(self) -> Path:
        """The image as a database file, written on first use: serialized bytes are the file format."""
        with self._lock:
            if self._base is None:
                assert self._folder is not None
                base = self._folder / "image.sqlite"
                base.write_bytes(self.image)
                self._base = base
            return self._base


def copy_file(src: Path, dst: Path) -> None:
    """Copy in the kernel: a reflink (blocks shared until written) where the filesystem supports it."""
    with src.open("rb") as fin, dst.open("wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        done = 0
        try:
            while done < size:
                n = os.copy_file_range(fin.fileno(), fout.fileno(), size - done)
                if n == 0:
                    break
                done += n
        except (AttributeError, OSError):  # no copy_file_range here, or not across these filesystems
            done = 0
        if done < size:
            fin.seek(0)
            fout.seek(0)
            fout.truncate()
            shutil.copyfileobj(fin, fout, 1024 * 1024)
