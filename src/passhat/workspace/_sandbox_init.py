"""Inside ``unshare``: make the file system read-only but for the given folders, then run the command.

Run as ``python -I -S _sandbox_init.py SETPRIV COMMAND CWD WRITABLE...`` as PID 1 of fresh user, mount,
PID, network and IPC namespaces (``unshare`` makes them and maps our user to root in the user
namespace, which lets us change mounts there, and only there: mount events do not propagate back).

1. ``mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)`` on ``/``: one system call makes every mount in
   this namespace read-only (Linux 5.12+; there is no recursive read-only in ``mount(8)`` before
   util-linux 2.39, and one ``mount -o remount,bind,ro`` per mount costs ~1.5 ms each).
2. The folder holding each writable folder (normally the temporary folder, where the other trials'
   copies and the image are) is covered by an empty read-only tmpfs: see :func:`covers`.
3. A private tmpfs on ``/dev/shm``, writable (Python's multiprocessing needs it; the host's must not be
   written). When the copies are in ``/dev/shm`` it is also their folder's cover.
4. Each writable folder is bind-mounted back at its own path (made in its cover), read-write.
5. The command runs in a child with every capability dropped (``setpriv``): it cannot remount
   anything, and a user namespace it makes itself gets its mounts locked read-only by the kernel.
   We stay PID 1 to reap it (and orphans) and exit with its status; when we exit, the kernel kills
   every process left in the namespace, so nothing the command started outlives it.

Any failure before the command runs exits with :data:`SETUP_FAILED` and a line starting ``passhat
sandbox:`` on stderr: the command never runs unconfined. Imports only the standard library; ``-I -S``
keeps start-up at a few milliseconds.
"""

from __future__ import annotations

import ctypes
import os
import sys

SETUP_FAILED = 125
SYS_MOUNT_SETATTR = 442  # the same number on every architecture Linux added it to at once
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC = 0x2, 0x4, 0x1000, 0x4000


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


SHM = "/dev/shm"


def fail(what: str, reason: str | None = None) -> None:
    sys.stderr.write(f"passhat sandbox: {what}: {reason or os.strerror(ctypes.get_errno())}\n")
    sys.exit(SETUP_FAILED)


def interpreter_folders() -> list[str]:
    """Folders the command needs to see wherever they are: this interpreter's installation, as called
    (a virtual environment's ``bin/python`` is a link out of it, and this helper runs with -I -S, so its
    ``sys.prefix`` is the base interpreter's) and as resolved."""
    called = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    resolved = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
    return list(dict.fromkeys(os.path.realpath(p) for p in (called, resolved, sys.prefix, sys.base_prefix)))


def hidden_parents(writable: list[str]) -> list[str]:
    """The folders holding the writable ones (normally the temporary folder), to be shown empty.

    Other trials' copies and the image's master copy sit beside this copy: the command must not read
    them (a trial copying a sibling's work would make pass^k measure nothing). Not hidden: ``/``, and a
    folder that *is* the interpreter's installation or lies inside it (an interpreter installed right in
    the temporary folder); one merely holding it (a virtual environment in ``/tmp/venv``) is hidden and
    the installation bound back read-only (:func:`kept_inside`).
    """
    ours = interpreter_folders()
    parents = []
    for folder in writable:
        parent = os.path.dirname(folder)
        if parent != "/" and parent not in parents and not any(p == parent or parent.startswith(p + "/") for p in ours):
            parents.append(parent)
    return parents


def kept_inside(covers: list[str]) -> list[str]:
    """The interpreter's folders that a cover would hide: bound back, read-only, so `python` still runs."""
    return [p for p in interpreter_folders() if any(p.startswith(c + "/") for c in covers)]


def covers(writable: list[str]) -> list[str]:
    """The folders to cover with an empty tmpfs: :func:`hidden_parents` and ``/dev/shm``, leaving out any
    inside another (copies in ``/tmp/ws`` and a command folder in ``/tmp``: covering ``/tmp`` hides both,
    and covering ``/tmp/ws`` after it would fail, as covering ``/tmp`` after it would hide the first)."""
    found = list(dict.fromkeys([*hidden_parents(writable), SHM]))
    return [c for c in found if not any(c.startswith(other + "/") for other in found)]


def main() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    setpriv, command, cwd = sys.argv[1], sys.argv[2], sys.argv[3]
    writable = [os.path.realpath(f) for f in sys.argv[4:]]

    def setattr_(path: bytes, flags: int, attr: MountAttr) -> int:
        return libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path, flags, ctypes.byref(attr), ctypes.sizeof(attr))

    def mount(source: bytes | None, target: str, fstype: bytes | None, flags: int, data: bytes | None, what: str) -> None:
        if libc.mount(source, os.fsencode(target), fstype, flags, data) != 0:
            fail(what)

    hidden = covers(writable)
    kept = kept_inside(hidden)
    try:
        handles = [os.open(f, os.O_PATH | os.O_DIRECTORY) for f in writable]  # still reachable once hidden
        kept_handles = [os.open(f, os.O_PATH | os.O_DIRECTORY) for f in kept]
    except OSError as exc:
        fail(f"cannot open {exc.filename}", exc.strerror)
    if setattr_(b"/", AT_RECURSIVE, MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)) != 0:
        fail("cannot make the file system read-only (mount_setattr)")
    for cover in hidden:
        options = b"size=64m,mode=1777" if cover == SHM else b"size=1m,mode=755"
        mount(b"tmpfs", cover, b"tmpfs", MS_NOSUID | MS_NODEV, options, f"cannot cover {cover} with a tmpfs")
    for folder, handle in zip(kept, kept_handles, strict=True):  # the interpreter, read-only as before
        try:
            os.makedirs(folder, 0o755, exist_ok=True)
        except OSError as exc:
            fail(f"cannot make {folder} in its cover", exc.strerror)
        mount(f"/proc/self/fd/{handle}".encode(), folder, None, MS_BIND | MS_REC, None, f"cannot bind {folder}")
        if setattr_(os.fsencode(folder), AT_RECURSIVE, MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)) != 0:
            fail(f"cannot make {folder} read-only")
        os.close(handle)
    for folder, handle in zip(writable, handles, strict=True):
        try:
            if any(folder.startswith(cover + "/") for cover in hidden):
                os.makedirs(folder, 0o700, exist_ok=True)
        except OSError as exc:
            fail(f"cannot make {folder} in its cover", exc.strerror)
        mount(f"/proc/self/fd/{handle}".encode(), folder, None, MS_BIND, None, f"cannot bind {folder}")
        if setattr_(os.fsencode(folder), 0, MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)) != 0:
            fail(f"cannot make {folder} writable")
        os.close(handle)
    for cover in hidden:
        if cover != SHM and setattr_(os.fsencode(cover), 0, MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)) != 0:
            fail(f"cannot make {cover} read-only")
    try:
        os.chdir(cwd)  # again, through the new mounts: the inherited working folder is on the read-only one
    except OSError as exc:
        fail(f"cannot enter {cwd}", exc.strerror)
    drop = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    argv = [setpriv, *drop, "/bin/sh", "-c", command]
    try:
        child = os.fork()
    except OSError:
        fail("cannot fork")
    if child == 0:
        try:
            os.execv(setpriv, argv)
        except OSError as exc:
            os.write(2, f"passhat sandbox: cannot run {setpriv}: {exc.strerror}\n".encode())
        os._exit(SETUP_FAILED)
    while True:
        pid, status = os.wait()
        if pid == child:
            sys.stdout.flush()
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main()
