"""File-system helpers shared by images and copies: walking, hashing, copying, removing.

Kept apart from :mod:`passhat.workspace.tree` so that module reads as the model (image, copy, diff)
and this one as the mechanics.
"""

from __future__ import annotations

import errno
import fcntl
import fnmatch
import hashlib
import os
import shutil
import stat
from collections.abc import Iterator, Sequence

from passhat.errors import describe_os_error
from passhat.workspace.errors import WorkspaceError

describe = describe_os_error
"""``FILE: reason`` for an OSError (re-exported so workspace modules import one helper module)."""

ALWAYS_IGNORED = (".git",)
"""Names never part of a workspace tree, whatever ``ignore`` says: a ``.git`` folder (or the ``.git``
file of a linked worktree) is the history, not the tree; an image never holds one, so a copy's diff
must not count one the agent made (``git init``) as thousands of added files."""

_FICLONE = 0x40049409  # _IOW(0x94, 9, int), linux/fs.h
_clone_works: bool | None = None  # None: not tried yet on this machine
_copy_range_works = True


def ignored(name: str, patterns: Sequence[str]) -> bool:
    """Whether one path component ``name`` matches an ignore pattern (``fnmatch``, case-sensitive)."""
    return name in ALWAYS_IGNORED or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def walk(root: str, patterns: Sequence[str]) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry under ``root`` as (relative POSIX path, entry), parents before children.

    Does not follow symbolic links; skips ignored names (and everything below an ignored folder).
    Entries come in a stable order (sorted by name within each folder).
    """
    stack = [""]
    while stack:
        rel = stack.pop()
        folder = os.path.join(root, rel) if rel else root
        for entry in sorted(scandir(folder), key=lambda e: e.name, reverse=True):
            if ignored(entry.name, patterns):
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            yield path, entry
            if entry.is_dir(follow_symlinks=False):
                stack.append(path)


def scandir(folder: str) -> list[os.DirEntry[str]]:
    """The entries of ``folder``; a folder the agent made unreadable is given back its owner bits first."""
    try:
        with os.scandir(folder) as it:
            return list(it)
    except PermissionError:
        os.chmod(folder, stat.S_IMODE(os.lstat(folder).st_mode) | stat.S_IRWXU)
        with os.scandir(folder) as it:
            return list(it)


def sha256_file(path: str) -> str:
    """Hex sha256 of a file's content (made readable first if the agent took its read bit)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except PermissionError:
        os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | stat.S_IRUSR)
        f = open(path, "rb")  # noqa: SIM115
    with f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: str) -> bytes:
    """The content of a file (made readable first if the agent took its read bit)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except PermissionError:
        os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | stat.S_IRUSR)
        with open(path, "rb") as f:
            return f.read()


def file_mode(executable: bool) -> int:
    """The permission bits every workspace file gets: only the executable bit is part of a tree."""
    return 0o755 if executable else 0o644


def copy_file(src: str, dst: str, executable: bool) -> None:
    """Copy ``src`` to a new file ``dst``, sharing blocks where the file system allows.

    Tries a reflink (``FICLONE``: Btrfs, XFS, bcachefs; copy-on-write, O(1) per file), then an in-kernel
    ``copy_file_range`` (no user-space buffer), then ``shutil.copyfileobj``. What fails once with "not
    supported" is not tried again in this process.
    """
    global _clone_works, _copy_range_works
    with open(src, "rb") as fin:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, file_mode(executable))
        try:
            os.fchmod(fd, file_mode(executable))  # the umask must not decide a workspace file's bits
            if _clone_works is not False:
                try:
                    fcntl.ioctl(fd, _FICLONE, fin.fileno())
                    _clone_works = True
                    return
                except OSError as exc:
                    if exc.errno not in (errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY, errno.EPERM):
                        raise
                    if _clone_works is None:
                        _clone_works = False
            size = os.fstat(fin.fileno()).st_size
            if _copy_range_works and size:
                try:
                    done = 0
                    while done < size:
                        n = os.copy_file_range(fin.fileno(), fd, size - done)
                        if n == 0:
                            break
                        done += n
                    return
                except OSError as exc:
                    if exc.errno not in (errno.ENOSYS, errno.EXDEV, errno.EINVAL, errno.EOPNOTSUPP):
                        raise
                    _copy_range_works = False
                    os.lseek(fin.fileno(), 0, os.SEEK_SET)
                    os.ftruncate(fd, 0)
                    os.lseek(fd, 0, os.SEEK_SET)
            with os.fdopen(os.dup(fd), "wb") as fout:
                shutil.copyfileobj(fin, fout, 1024 * 1024)
        finally:
            os.close(fd)


def clone_used() -> bool:
    """Whether copies on this machine share blocks (a reflink worked)."""
    return bool(_clone_works)


def remove_tree(path: str) -> None:
    """Remove ``path`` and all below it, even folders and files the agent made read-only or unreadable.

    A missing path is fine (removing twice is not an error).
    """

    def unlock(func, failed, exc_info) -> None:  # noqa: ANN001 - shutil's onerror signature
        if isinstance(exc_info[1], FileNotFoundError):
            return
        parent = os.path.dirname(failed)
        for p in (parent, failed):
            try:
                if not os.path.islink(p):
                    os.chmod(p, stat.S_IRWXU)
            except OSError:
                pass
        if os.path.isdir(failed) and not os.path.islink(failed):
            shutil.rmtree(failed, onerror=unlock)
        elif os.path.lexists(failed):
            os.unlink(failed)

    if os.path.lexists(path):
        shutil.rmtree(path, onerror=unlock)


def check_dir(path: str, what: str) -> None:
    """:class:`WorkspaceError` unless ``path`` is an existing folder."""
    if not os.path.isdir(path):
        reason = "does not exist" if not os.path.lexists(path) else "is not a folder"
        raise WorkspaceError(f"{path}: {what} {reason}")
