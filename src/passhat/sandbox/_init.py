"""The first process of a confined program: set up the confinement, run the program, outlive nothing.

Run as ``python -I -S _init.py SPEC`` (``SPEC``: the spec dict of :func:`passhat.sandbox.base_spec`, in
:mod:`marshal` form as hex: built in, where importing ``json`` would cost start-up time). Two modes:

``namespaces``: PID 1 of fresh user, mount, PID, network and IPC namespaces (``unshare`` makes them and
maps our user to root in the user namespace, which lets us change mounts there, and only there).

1. Join the bound cgroups (``cgroup.procs``), while the file system is still writable.
2. Bring ``lo`` up, add the allowed hosts' addresses to it (netlink), and listen on each forwarded
   address; a connection is passed on to a unix socket in a folder the program cannot see (reached
   through a descriptor opened before it was hidden), whose harness side decides what it reaches.
3. ``mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)`` on ``/``: one call makes every mount read-only.
4. The folders holding each writable folder (the temporary folder: other trials' copies), ``/dev/shm``
   and the folders the spec hides (the harness's ``$HOME``, the run folder) are covered by empty tmpfs;
   the interpreter and the folders the spec keeps are bound back read-only, the writable ones
   read-write, and hidden folders inside a kept one covered again.
5. The program runs in a child with every capability dropped (the bounding set emptied, then ``capset``:
   none after ``exec`` either) and ``no_new_privs``, under the spec's rlimits:
   it cannot remount anything, and a user namespace it makes itself gets its mounts locked by the
   kernel. We stay PID 1 to reap orphans and forward connections; when we exit, the kernel kills every
   process left in the namespace, so nothing the program started outlives it.

``fallback`` (no namespaces on this machine): a child subreaper. Orphans the program leaves re-parent
to us; when the program exits, or we are asked to stop (SIGTERM), every descendant is killed. As root,
the program runs as the spec's ``uid`` (``nobody``): a process made non-dumpable, as the harness is, is
closed to other users' ``/proc/<pid>/mem`` and ``fd``; when ``nobody`` could not reach the program (an
interpreter under ``/root``), it stays root without a single capability, which closes them as well.

Any failure before the program runs exits with :data:`SETUP_FAILED` and a line starting ``passhat
sandbox:`` on stderr: the program never runs unconfined. Imports only built-in modules where it can
(``_socket``, ``_thread``, ``marshal``: ``socket``, ``threading`` and ``json`` would import ``enum`` and
``re``); with ``-I -S`` start-up stays at a few milliseconds.
"""

from __future__ import annotations

import _ctypes  # the C half of ctypes: importing ctypes itself costs ~5 ms of every confined start
import _signal as signal  # built in; the signal module imports enum
import marshal
import os
import sys

SETUP_FAILED = 125
SYS_MOUNT_SETATTR = 442  # the same number on every architecture Linux added it to at once
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC = 0x2, 0x4, 0x1000, 0x4000
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 4, 24, 36, 38
SHM = "/dev/shm"
LIMITS = {"fsize": "RLIMIT_FSIZE", "nproc": "RLIMIT_NPROC", "as": "RLIMIT_AS"}


class c_int(_ctypes._SimpleCData):  # what ctypes.c_int, c_uint32 and c_uint64 are, without ctypes
    _type_ = "i"


class c_uint32(_ctypes._SimpleCData):
    _type_ = "I"


class c_uint64(_ctypes._SimpleCData):
    _type_ = "Q"


class MountAttr(_ctypes.Structure):
    _fields_ = [("attr_set", c_uint64), ("attr_clr", c_uint64), ("propagation", c_uint64), ("userns_fd", c_uint64)]


class _LibcFunction(_ctypes.CFuncPtr):
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = c_int


class Libc:
    """The C library's functions by attribute, as ``ctypes.CDLL(None, use_errno=True)`` gives them."""

    def __init__(self) -> None:
        self._handle = _ctypes.dlopen(None, os.RTLD_NOW)  # type: ignore[arg-type]  # None: this program (typeshed lacks it)

    def __getattr__(self, name: str) -> _LibcFunction:
        function = _LibcFunction((name, self))  # type: ignore[arg-type]  # any object with _handle, as CDLL passes itself
        setattr(self, name, function)
        return function


def fail(what: str, reason: str | None = None) -> None:
    sys.stderr.write(f"passhat sandbox: {what}: {reason or os.strerror(_ctypes.get_errno())}\n")
    sys.exit(SETUP_FAILED)


def interpreter_folders() -> list[str]:
    """Folders the program needs to see wherever they are: this interpreter's installation, as called
    (a virtual environment's ``bin/python`` is a link out of it, and this helper runs with -I -S, so its
    ``sys.prefix`` is the base interpreter's) and as resolved."""
    called = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    resolved = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
    return list(dict.fromkeys(os.path.realpath(p) for p in (called, resolved, sys.prefix, sys.base_prefix)))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def hidden_parents(writable: list[str]) -> list[str]:
    """The folders holding the writable ones (normally the temporary folder), to be shown empty.

    Other trials' copies and the image's master copy sit beside this copy: the program must not read
    them (a trial copying a sibling's work would make pass^k measure nothing). Not hidden: ``/``, and a
    folder that *is* the interpreter's installation or lies inside it (an interpreter installed right in
    the temporary folder); one merely holding it (a virtual environment in ``/tmp/venv``) is hidden and
    the installation bound back read-only (:func:`kept_inside`).
    """
    ours = interpreter_folders()
    parents = []
    for folder in writable:
        parent = os.path.dirname(folder)
        if parent != "/" and parent not in parents and not any(_within(parent, p) for p in ours):
            parents.append(parent)
    return parents


def kept_inside(covers: list[str], keep: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    """The interpreter's folders and the spec's kept ones that a cover would hide: bound back read-only."""
    found = list(dict.fromkeys([*interpreter_folders(), *keep]))
    return [p for p in found if any(p.startswith(c + "/") for c in covers)]


def covers(writable: list[str], hide: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    """The folders to cover with an empty tmpfs: :func:`hidden_parents`, ``/dev/shm`` and ``hide``, leaving
    out any inside another (copies in ``/tmp/ws`` and a command folder in ``/tmp``: covering ``/tmp`` hides
    both, and covering ``/tmp/ws`` after it would fail, as covering ``/tmp`` after it would hide the first),
    and any folder holding a writable or interpreter folder only through ``hide`` (that is not hidden)."""
    ours = interpreter_folders()
    asked = [h for h in hide if os.path.isdir(h) and h != "/" and not any(_within(p, h) for p in [*writable, *ours])
             and not any(_within(h, w) for w in writable)]
    found = list(dict.fromkeys([*hidden_parents(writable), SHM, *asked]))
    return [c for c in found if not any(c.startswith(other + "/") for other in found)]


def up_loopback() -> None:
    import _socket
    import _struct
    import fcntl

    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        fcntl.ioctl(s.fileno(), 0x8914, _struct.pack("16sh", b"lo", 0x1 | 0x8 | 0x40))  # SIOCSIFFLAGS: UP|LOOPBACK|RUNNING
    finally:
        s.close()


def add_address(ip: str) -> None:
    """``ip addr add IP/32 dev lo`` through netlink (RTM_NEWADDR), for an allowed host's address."""
    import _socket
    import _struct

    addr = _socket.inet_aton(ip)
    body = _struct.pack("BBBBI", _socket.AF_INET, 32, 0, 0, _socket.if_nametoindex("lo"))
    body += _struct.pack("HH4s", 8, 2, addr) + _struct.pack("HH4s", 8, 1, addr)  # IFA_LOCAL, IFA_ADDRESS
    header = _struct.pack("IHHII", 16 + len(body), 20, 0x1 | 0x4 | 0x400 | 0x200, 1, 0)  # RTM_NEWADDR, REQUEST|ACK|CREATE|EXCL
    s = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW, 0)
    try:
        s.sendto(header + body, (0, 0))
        reply = s.recv(4096)
    finally:
        s.close()
    error = _struct.unpack_from("i", reply, 16)[0]
    if error not in (0, -17):  # EEXIST: two allowed names with one address
        fail(f"cannot add address {ip} to lo", os.strerror(-error))


def forward(listen: tuple[str, int], target: str) -> None:
    """Accept on ``listen`` (inside the namespace) and pass each connection on to the unix socket ``target``."""
    import _socket
    import _thread

    def pump(src: _socket.socket, dst: _socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s, how in ((dst, _socket.SHUT_WR), (src, _socket.SHUT_RD)):
                try:
                    s.shutdown(how)
                except OSError:
                    pass

    def serve(server: _socket.socket) -> None:
        while True:
            fd, _ = server._accept()
            client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
            client.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)  # else small answers wait ~40 ms for an ACK
            upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                upstream.connect(target)
            except OSError:
                client.close()
                upstream.close()
                continue
            _thread.start_new_thread(pump, (client, upstream))
            _thread.start_new_thread(pump, (upstream, client))

    server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    server.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    try:
        server.bind(listen)
    except OSError as exc:
        fail(f"cannot listen on {listen[0]}:{listen[1]}", exc.strerror)
    server.listen(128)
    _thread.start_new_thread(serve, (server,))


def confine_mounts(spec: dict, libc: Libc) -> None:  # type: ignore[type-arg]
    """Steps 3 and 4 of the module docstring."""
    writable = [os.path.realpath(f) for f in spec["writable"]]
    hide = [os.path.realpath(f) for f in spec.get("hide", [])]

    def setattr_(path: str, flags: int, attr: MountAttr) -> int:
        return libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, os.fsencode(path), flags, _ctypes.byref(attr), _ctypes.sizeof(attr))

    def mount(source: str | None, target: str, fstype: bytes | None, flags: int, data: bytes | None, what: str) -> None:
        if libc.mount(source and os.fsencode(source), os.fsencode(target), fstype, flags, data) != 0:
            fail(what)

    hidden = covers(writable, hide)
    kept = kept_inside(hidden, [os.path.realpath(k) for k in spec.get("keep", [])])
    late = [h for h in hide if h not in hidden and os.path.isdir(h) and any(_within(h, k) for k in kept)
            and not any(_within(w, h) for w in writable)]
    try:
        handles = [os.open(f, os.O_PATH | os.O_DIRECTORY) for f in writable]  # still reachable once hidden
        kept_handles = [os.open(f, os.O_PATH) for f in kept]
    except OSError as exc:
        fail(f"cannot open {exc.filename}", exc.strerror)
    if spec.get("hosts_file"):
        mount(spec["hosts_file"], "/etc/hosts", None, MS_BIND, None, "cannot bind /etc/hosts")
    if setattr_("/", AT_RECURSIVE, MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)) != 0:
        fail("cannot make the file system read-only (mount_setattr)")
    for cover in hidden:
        options = b"size=64m,mode=1777" if cover == SHM else b"size=1m,mode=755"
        mount("tmpfs", cover, b"tmpfs", MS_NOSUID | MS_NODEV, options, f"cannot cover {cover} with a tmpfs")
    for folder, handle in zip(kept, kept_handles, strict=True):  # the interpreter, read-only as before
        try:
            if os.path.isdir(f"/proc/self/fd/{handle}"):
                os.makedirs(folder, 0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(folder), 0o755, exist_ok=True)
                if not os.path.exists(folder):
                    os.close(os.open(folder, os.O_CREAT | os.O_WRONLY, 0o644))
        except OSError as exc:
            fail(f"cannot make {folder} in its cover", exc.strerror)
        mount(f"/proc/self/fd/{handle}", folder, None, MS_BIND | MS_REC, None, f"cannot bind {folder}")
        if setattr_(folder, AT_RECURSIVE, MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)) != 0:
            fail(f"cannot make {folder} read-only")
        os.close(handle)
    for folder, handle in zip(writable, handles, strict=True):
        try:
            if any(folder.startswith(cover + "/") for cover in hidden):
                os.makedirs(folder, 0o700, exist_ok=True)
        except OSError as exc:
            fail(f"cannot make {folder} in its cover", exc.strerror)
        mount(f"/proc/self/fd/{handle}", folder, None, MS_BIND, None, f"cannot bind {folder}")
        if setattr_(folder, 0, MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)) != 0:
            fail(f"cannot make {folder} writable")
        os.close(handle)
    for cover in late:  # the run folder inside the agent's own (kept) working folder
        mount("tmpfs", cover, b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=755", f"cannot cover {cover} with a tmpfs")
    for cover in [*hidden, *late]:
        if cover != SHM and setattr_(cover, 0, MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)) != 0:
            fail(f"cannot make {cover} read-only")


def set_limits(limits: dict) -> None:  # type: ignore[type-arg]
    if not any(v is not None for v in limits.values()):
        return
    import resource

    for key, value in limits.items():
        if value is not None:
            which = getattr(resource, LIMITS[key])
            resource.setrlimit(which, (value, value))


def join_cgroups(folders: list[str]) -> None:
    for folder in folders:
        try:
            with open(os.path.join(folder, "cgroup.procs"), "w") as f:
                f.write("0")
        except OSError as exc:
            fail(f"cannot join the cgroup {folder}", exc.strerror)


def drop_capabilities(libc: Libc) -> None:
    """Root without a single capability, now and after exec (the bounding set emptied first): above all
    without ``CAP_SYS_PTRACE``, which is what opens a non-dumpable process's ``/proc/<pid>/mem`` to root."""
    cap = 0
    while libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    header = (c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (c_uint32 * 6)()  # effective, permitted, inheritable × 2 words: all empty
    if libc.capset(header, data) != 0:
        fail("cannot drop capabilities (capset)")


def kill_descendants() -> None:
    """Kill every child, reap, repeat: the grandchildren of a killed child re-parent to us (a subreaper).

    Only the children just killed are waited for: a blocking wait for *any* child would also wait for a
    grandchild forked between the scan and the kill (re-parented to us, alive, not yet killed), which is
    exactly the child that must not outlive the trial."""
    me = os.getpid()
    while True:
        children: set[int] = set()
        try:
            for task in os.listdir(f"/proc/{me}/task"):
                with open(f"/proc/{me}/task/{task}/children") as f:
                    children.update(int(p) for p in f.read().split())
        except OSError:
            pass
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:  # zombies that were never in the list
                pass
        except ChildProcessError:
            if not children:
                return


class Stop(Exception):
    """SIGTERM from the harness (fallback mode): the trial is over."""


def _stop(*_: object) -> None:
    raise Stop


def main() -> None:
    libc = Libc()
    spec = marshal.loads(bytes.fromhex(sys.argv[1]))
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the program cannot read our memory or descriptors
    namespaces = spec["mode"] == "namespaces"
    join_cgroups(spec.get("cgroups", []))
    if namespaces:
        if spec.get("forward"):
            up_loopback()
            try:
                sockets = os.open(spec["sockets"], os.O_PATH | os.O_DIRECTORY)
            except OSError as exc:
                fail(f"cannot open {spec['sockets']}", exc.strerror)
            for rule in spec["forward"]:
                if not rule["host"].startswith("127."):
                    add_address(rule["host"])
                forward((rule["host"], rule["port"]), f"/proc/self/fd/{sockets}/{rule['socket']}")
        confine_mounts(spec, libc)
    else:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        os.chdir(spec["cwd"])  # again, through the new mounts: the inherited working folder is on the read-only one
    except OSError as exc:
        fail(f"cannot enter {spec['cwd']}", exc.strerror)
    if not namespaces:
        signal.signal(signal.SIGTERM, _stop)
    try:
        child = os.fork()
    except OSError:
        fail("cannot fork")
    if child == 0:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            set_limits(spec.get("limits", {}))
            if spec.get("uid") is not None:
                os.setgroups([])
                os.setgid(spec["uid"])
                os.setuid(spec["uid"])
            if os.geteuid() == 0:
                drop_capabilities(libc)
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            os.execvp(spec["argv"][0], spec["argv"])
        except OSError as exc:
            os.write(2, f"passhat sandbox: cannot run {spec['argv'][0]}: {exc.strerror}\n".encode())
        os._exit(SETUP_FAILED)
    status = None
    while status is None:
        try:
            pid, code = os.wait()
        except Stop:  # the harness ends the trial: the program first, then all it left
            os.kill(child, signal.SIGKILL)
            continue
        except ChildProcessError:
            break
        if pid == child:
            status = os.waitstatus_to_exitcode(code) if os.WIFEXITED(code) else 128 + os.WTERMSIG(code)
    if not namespaces:
        kill_descendants()
    sys.stdout.flush()
    os._exit(SETUP_FAILED if status is None else status)


if __name__ == "__main__":
    main()
