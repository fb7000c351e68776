"""One trial's private copy of a workspace image, and what changed in it."""

from __future__ import annotations

import dataclasses
import os
import stat
import time
import weakref
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from passhat.workspace import _fs
from passhat.workspace.diff import (
    MAX_DIFF_INPUT,
    MAX_KEPT_CONTENT,
    MAX_KEPT_TOTAL,
    MAX_TEXT_DIFFS,
    ChangeKind,
    FileChange,
    FileDiff,
    as_text,
    looks_binary,
    over_budget_note,
    too_large_note,
    unified,
)
from passhat.workspace.entries import FileEntry, link_entry, same, tree_digest
from passhat.workspace.errors import WorkspaceError

if TYPE_CHECKING:
    from passhat.workspace.tree import WorkspaceImage

RACY_NS = 20_000_000
"""How close (ns) to the moment a copy was stat-ed a file's ctime may be and still be trusted.

File times come from a clock that may tick only every few milliseconds, so a file rewritten within the
same tick as the copy was made could keep its ctime. As in git's "racy clean" rule, such files are
hashed by :meth:`WorkspaceCopy.diff` until their stat is old enough to trust."""

_SPECIAL = "special"  # stands for fifos, sockets and devices an agent made; never opened


Stat = tuple[int, int, int, int]
"""(st_size, st_mtime_ns, st_ctime_ns, st_ino): the same four numbers mean the same content."""


class WorkspaceCopy:
    """One trial's private copy of an image, in its own temporary folder ``root``.

    :meth:`diff` hashes only files whose stat changed since the copy was made: size, mtime, ctime and
    inode. A program can set mtime back (``os.utime``) but not ctime, and a replaced file has a new
    inode, so a rewrite is caught even when it keeps size and mtime.
    """

    def __init__(self, image: WorkspaceImage, root: Path) -> None:
        """Made by :meth:`WorkspaceImage.restore`."""
        self.image = image
        self.root: Path = root.resolve()
        """The copy's folder (resolved, so paths under it compare as strings)."""
        self._finalizer = weakref.finalize(self, _fs.remove_tree, str(self.root))
        start = time.time_ns()
        self._stats: dict[str, tuple[Stat, bool]] = {}
        for rel, entry in image.files.items():
            if entry.symlink is None:
                self._stats[rel] = self._trusted(os.lstat(os.path.join(self.root, rel)), start)

    @staticmethod
    def _trusted(st: os.stat_result, taken_after_ns: int) -> tuple[Stat, bool]:
        key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        return key, st.st_ctime_ns < taken_after_ns - RACY_NS

    def _scan(self) -> dict[str, FileEntry]:
        """Every file of the copy now, hashing only those whose stat is new or not yet trusted."""
        if not self._finalizer.alive:
            raise WorkspaceError(f"{self.root}: workspace copy was discarded")
        if self.image.closed:
            raise WorkspaceError(f"{self.root}: the image of this workspace copy is closed; diff copies before closing the image")
        start = time.time_ns()
        images = self.image.files
        found: dict[str, FileEntry] = {}
        for rel, entry in _fs.walk(str(self.root), self.image.ignore):
            if entry.is_symlink():
                found[rel] = link_entry(os.readlink(entry.path))
            elif entry.is_file(follow_symlinks=False):
                st = entry.stat(follow_symlinks=False)
                known = self._stats.get(rel)
                key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                if known is not None and known[1] and known[0] == key:
                    found[rel] = images[rel]
                    continue
                current = FileEntry(st.st_size, _fs.sha256_file(entry.path), bool(st.st_mode & stat.S_IXUSR))
                found[rel] = current
                if known is not None and same(current, images.get(rel)):
                    self._stats[rel] = self._trusted(st, start)  # unchanged after all: trust it from now on
            elif not entry.is_dir(follow_symlinks=False):
                found[rel] = FileEntry(0, _fs.sha256_bytes(_SPECIAL.encode()), False)
        return found

    def digest(self) -> str:
        """sha256 of the tree as it is now, by the scheme of :attr:`WorkspaceImage.digest`."""
        return tree_digest(self._scan())

    def diff(self) -> FileDiff:
        """Added, removed and modified files against the image, sorted by path (ignored names skipped).

        A changed executable bit is a modification; symbolic links are compared by target.
        """
        now = self._scan()
        before = self.image.files
        budget = MAX_KEPT_TOTAL
        diffs = MAX_TEXT_DIFFS
        changes: list[FileChange] = []
        for rel in sorted(set(now) | set(before)):
            b, a = before.get(rel), now.get(rel)
            if same(a, b):
                continue
            change = self._change(rel, b, a, budget)
            if change is None:
                continue
            if change.content is not None:
                budget -= len(change.content.encode("utf-8"))
            if change.text_diff is not None:
                size = len(change.text_diff.encode("utf-8"))
                if size > diffs:
                    change = dataclasses.replace(change, text_diff=over_budget_note(rel))
                else:
                    diffs -= size
            changes.append(change)
        return FileDiff(tuple(changes))

    def _change(self, rel: str, b: FileEntry | None, a: FileEntry | None, budget: int) -> FileChange | None:
        kind: ChangeKind = "added" if b is None else "removed" if a is None else "modified"
        before_sha = b.sha256 if b is not None else None
        if a is None:
            assert b is not None
            data, big = self._read_side(os.path.join(str(self.image.path), rel), b)
            text = None if data is None or big else as_text(data)
            binary = b.symlink is None and _binary(data, big, text)
            diff = None if b.symlink is not None or binary else too_large_note(rel, b.size) if big else unified(rel, text, None)
            return FileChange(rel, "removed", before_sha, None, binary, diff, None, True, b.executable)
        if a.symlink is not None:
            return FileChange(rel, kind, before_sha, a.sha256, False, None, None, True, False, symlink=a.symlink)
        path = os.path.join(self.root, rel)
        if a.sha256 == _fs.sha256_bytes(_SPECIAL.encode()) and not os.path.isfile(path):
            return FileChange(rel, kind, before_sha, a.sha256, True, None, None, False, False)
        data, big = self._read_side(path, a)
        if data is not None and not big:
            a = FileEntry(len(data), _fs.sha256_bytes(data), a.executable)  # what we read is what we record
            if same(a, b):
                return None  # changed back between the scan and now
        after_text = None if data is None or big else as_text(data)
        binary = _binary(data, big, after_text)
        mode = ""
        if b is not None and b.symlink is None and b.executable != a.executable:
            mode = f"old mode {100755 if b.executable else 100644}\nnew mode {100755 if a.executable else 100644}\n"
        if b is not None and b.symlink is None and b.sha256 == a.sha256:  # only the executable bit changed
            return FileChange(rel, kind, before_sha, a.sha256, binary, mode, None, True, a.executable)
        before_text: str | None = None
        before_big = False
        if b is not None and b.symlink is None:
            before_data, before_big = self._read_side(os.path.join(str(self.image.path), rel), b)
            before_text = None if before_data is None or before_big else as_text(before_data)
        if binary:
            diff = None
        elif big or before_big:
            diff = mode + too_large_note(rel, max(a.size, b.size if b else 0))
        else:
            diff = mode + unified(rel, before_text, after_text)
        content = None
        if after_text is not None:
            size = len(data or b"")
            if size <= MAX_KEPT_CONTENT and size <= budget:
                content = after_text
        return FileChange(rel, kind, before_sha, a.sha256, binary, diff, content, content is not None, a.executable)

    @staticmethod
    def _read_side(path: str, entry: FileEntry) -> tuple[bytes | None, bool]:
        """(content or its first bytes, whether it is over :data:`MAX_DIFF_INPUT`); no bytes for a link."""
        if entry.symlink is not None:
            return None, False
        if entry.size > MAX_DIFF_INPUT:
            with open(path, "rb") as f:
                return f.read(8192), True
        return _fs.read_bytes(path), False

    def strip(self) -> None:
        """Make the copy exactly the tree :meth:`diff` describes, before anything is graded on it: remove what
        a tree leaves out (the ignored caches, ``*.pyc``, ``.git``) and give every file the mode a tree has
        (0644, or 0755 with the executable bit; folders 0755).

        What the diff does not show must not decide a verdict: a bytecode file planted in ``__pycache__``
        runs instead of its unchanged source, and a re-grade, which rebuilds the tree from the record, would
        disagree with the run. Call it after :meth:`diff`, whose stat fast path it does not keep.
        """
        if not self._finalizer.alive:
            raise WorkspaceError(f"{self.root}: workspace copy was discarded")
        stack = [str(self.root)]
        while stack:
            for entry in _fs.scandir(stack.pop()):
                st = entry.stat(follow_symlinks=False)
                if _fs.ignored(entry.name, self.image.ignore):
                    if stat.S_ISDIR(st.st_mode):
                        _fs.remove_tree(entry.path)
                    else:
                        os.unlink(entry.path)
                    continue
                if stat.S_ISDIR(st.st_mode):
                    mode = 0o755
                    stack.append(entry.path)
                elif stat.S_ISREG(st.st_mode):
                    mode = _fs.file_mode(bool(st.st_mode & stat.S_IXUSR))
                else:
                    continue  # links have no mode of their own; special files are in the diff already
                if stat.S_IMODE(st.st_mode) != mode:
                    os.chmod(entry.path, mode)

    def discard(self) -> None:
        """Remove the copy, even folders and files the agent made read-only or unreadable. Idempotent."""
        self._finalizer()

    def __enter__(self) -> WorkspaceCopy:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.discard()

    def __repr__(self) -> str:
        return f"WorkspaceCopy({str(self.root)!r})"


def _binary(data: bytes | None, big: bool, text: str | None) -> bool:
    """Binary: not UTF-8 text in full (or, for a file too big to read whole, in its first bytes)."""
    if data is None:
        return True
    return looks_binary(data) if big else text is None
