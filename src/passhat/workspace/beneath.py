"""Opening a path of a workspace copy so that the open itself cannot leave the copy.

:func:`passhat.workspace.paths.inside` checks a path; a check and the open that follows are two system
calls, and a process of the agent that swaps a folder for a symbolic link in between makes the open
land outside (an audit wrote 12 files outside a copy that way). Here the check *is* the open: every
folder is opened relative to a descriptor of the one above it, with ``openat2(RESOLVE_BENEATH |
RESOLVE_NO_MAGICLINKS)`` (Linux 5.6+) where the kernel has it — a link whose target leaves the
folder fails the open with ``EXDEV`` — else one component at a time with ``O_NOFOLLOW`` (no link
followed at all, stricter but safe). Callers still use ``inside()`` first, for its messages.
"""

from __future__ import annotations

import ctypes
import errno
import os

SYS_OPENAT2 = 437  # the same on every architecture (added after the syscall tables were unified)
RESOLVE_NO_MAGICLINKS, RESOLVE_BENEATH = 0x02, 0x08
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_openat2_works: bool | None = None


def _openat2(dir_fd: int, path: str, flags: int, mode: int) -> int:
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(SYS_OPENAT2, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return int(fd)


def _walk(dir_fd: int, parts: list[str], flags: int, mode: int) -> int:
    """The fallback: each folder with ``O_NOFOLLOW`` below the last; the file itself with ``O_NOFOLLOW``."""
    current = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            following = os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=current)
            os.close(current)
            current = following
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=current)
    finally:
        os.close(current)


def open_beneath(dir_fd: int, relpath: str, flags: int, mode: int = 0o666) -> int:
    """``open(relpath, flags)`` relative to ``dir_fd`` that never resolves outside it (see module docstring).

    ``relpath`` is relative, without ``..``; raises :class:`OSError` (``EXDEV``/``ELOOP`` for an escape).
    """
    global _openat2_works
    parts = [p for p in relpath.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or relpath.startswith("/"):
        raise OSError(errno.EINVAL, "not a relative path inside the folder", relpath)
    if _openat2_works is not False:
        try:
            fd = _openat2(dir_fd, "/".join(parts), flags | os.O_CLOEXEC, mode)
            _openat2_works = True
            return fd
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EPERM) or _openat2_works:  # EPERM: a seccomp filter
                raise
            _openat2_works = False
    return _walk(dir_fd, parts, flags, mode)


def make_folders_beneath(dir_fd: int, relpath: str) -> int:
    """The folder ``relpath`` below ``dir_fd``, made where missing (``mkdir -p``), as an ``O_PATH`` descriptor;
    each folder is opened beneath the one above it, so a link swapped in cannot send the rest outside."""
    current = os.dup(dir_fd)
    try:
        for part in [p for p in relpath.split("/") if p not in ("", ".")]:
            try:
                following = open_beneath(current, part, _DIR)
            except FileNotFoundError:
                try:
                    os.mkdir(part, 0o755, dir_fd=current)
                except FileExistsError:
                    pass  # made (or swapped in) meanwhile: the open below decides
                following = open_beneath(current, part, _DIR)
            os.close(current)
            current = following
        result, current = current, -1
        return result
    finally:
        if current >= 0:
            os.close(current)


def uses_openat2() -> bool:
    """Whether this machine's opens go through ``openat2`` (``None`` until the first open: ``False``)."""
    return bool(_openat2_works)


__all__ = ["make_folders_beneath", "open_beneath", "uses_openat2"]
