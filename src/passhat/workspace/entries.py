"""The record of one file in a tree, and the digest of a tree: shared by images and copies."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass

from passhat.workspace import _fs


@dataclass(frozen=True)
class FileEntry:
    """One file (or symbolic link) of a tree."""

    size: int
    """Bytes of content (of the target path, for a symbolic link)."""
    sha256: str
    """Hex sha256 of the content (of the target path, for a symbolic link)."""
    executable: bool
    """The owner's executable bit (always false for a symbolic link)."""
    symlink: str | None = None
    """The target, when this entry is a symbolic link."""


def tree_digest(files: Mapping[str, FileEntry]) -> str:
    """sha256 over the sorted (path, kind, content sha256) list: a file's kind is ``x`` (executable),
    ``-`` (not), or ``l`` (symbolic link). Times, owners and the tree's location do not enter."""
    h = hashlib.sha256()
    for path in sorted(files):
        entry = files[path]
        kind = "l" if entry.symlink is not None else "x" if entry.executable else "-"
        h.update(b"%s\x00%s\x00%s\n" % (os.fsencode(path), kind.encode(), entry.sha256.encode()))
    return h.hexdigest()


def same(a: FileEntry | None, b: FileEntry | None) -> bool:
    """Same content, executable bit and link target (or both absent)."""
    if a is None or b is None:
        return a is b
    return (a.sha256, a.executable, a.symlink) == (b.sha256, b.executable, b.symlink)


def link_entry(target: str) -> FileEntry:
    """The entry of a symbolic link: its "content" is its target path."""
    raw = os.fsencode(target)
    return FileEntry(len(raw), _fs.sha256_bytes(raw), False, symlink=target)
