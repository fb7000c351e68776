"""The C PID 1 (``init.c``, shipped with the package): compiled on first use, or the reason it cannot be.

Built with the C compiler of ``$CC`` (else ``cc``, else ``gcc``) and ``-O2`` into a per-user cache folder
(``$XDG_CACHE_HOME/passhat/sandbox``, else ``~/.cache/...``), named by the hash of the source and the
compiler's target, so an edited source or another machine type builds anew and nothing else does. The
binary is written under a temporary name and renamed into place (a concurrent run sees the whole file or
none), mode 0755. A binary from a folder another user could write is never run: it would be the first
process of every sandbox, outside every confinement. Where any of this fails, the caller uses the Python
PID 1 and records :attr:`Built.note`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("init.c")
COMPILE_TIMEOUT_S = 120


@dataclass(frozen=True)
class Built:
    """The outcome of :func:`build`."""

    path: str | None
    """The compiled PID 1, ready to run; ``None``: it cannot be had here."""
    note: str
    """Where it is, or why there is none, in one line for a report."""


def cache_folder() -> str:
    """Where compiled PID 1s are kept for this user."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "passhat", "sandbox")


def compiler() -> list[str] | None:
    """``$CC`` split as a shell would, else ``cc`` or ``gcc`` from ``PATH``; ``None``: no compiler."""
    if os.environ.get("CC", "").strip():
        return shlex.split(os.environ["CC"])
    found = shutil.which("cc") or shutil.which("gcc")
    return [found] if found else None


def unsafe_folder(folder: str) -> str | None:
    """Why another user could change what ``folder`` holds (it, or a folder above it, writable by them
    without the sticky bit, or not owned by us or root); ``None``: only we (and root) can."""
    me = os.geteuid()
    path = os.path.realpath(folder)
    info = os.lstat(path)
    if info.st_uid != me or info.st_mode & 0o022:
        return f"{path} is not this user's alone (owner {info.st_uid}, mode {stat.filemode(info.st_mode)})"
    while path != "/":
        path = os.path.dirname(path)
        info = os.stat(path)
        if info.st_uid not in (0, me) or (info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX):
            return f"{path}, above {folder}, can be changed by another user (owner {info.st_uid}, mode " \
                   f"{stat.filemode(info.st_mode)})"
    return None


def _ours(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def build() -> Built:
    """The C PID 1 for this source, compiler and cache folder: compiled once (per user and machine type)."""
    command = compiler()
    if command is None:
        return Built(None, "no C compiler ($CC, cc, gcc)")
    return _build(tuple(command), cache_folder())


@functools.cache
def _build(command: tuple[str, ...], folder: str) -> Built:
    shown = shlex.join(command)
    try:
        target = subprocess.run([*command, "-dumpmachine"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return Built(None, f"the C compiler {shown} does not answer -dumpmachine: {exc}")
    machine = target.stdout.strip() or "unknown"
    digest = hashlib.sha256(SOURCE.read_bytes() + b"\0" + machine.encode()).hexdigest()[:16]
    try:
        os.makedirs(folder, 0o700, exist_ok=True)
        unsafe = unsafe_folder(folder)
    except OSError as exc:
        return Built(None, f"cannot make the cache folder {folder}: {exc.strerror or exc}")
    if unsafe:
        return Built(None, f"not building the C PID 1 in a folder others can write: {unsafe}")
    path = os.path.join(folder, f"init-{digest}-{machine}")
    if _ours(path):
        return Built(path, f"C PID 1 ({path})")
    fd, temporary = tempfile.mkstemp(prefix=".init-", dir=folder)
    os.close(fd)
    try:
        done = subprocess.run([*command, "-O2", "-o", temporary, str(SOURCE)], capture_output=True, text=True,
                              timeout=COMPILE_TIMEOUT_S, check=False)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            return Built(None, f"the C PID 1 did not compile ({shown}, exit {done.returncode}): "
                               f"{lines[-1] if lines else 'no message'}")
        os.chmod(temporary, 0o755)
        os.replace(temporary, path)
    except (OSError, subprocess.SubprocessError) as exc:
        return Built(None, f"the C PID 1 did not compile ({shown}): {exc}")
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return Built(path, f"C PID 1 ({path})")


__all__ = ["SOURCE", "Built", "build", "cache_folder", "compiler", "unsafe_folder"]
