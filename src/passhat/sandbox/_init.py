"""The first process of a confined program: set up the confinement, run the program, outlive nothing.

Run as ``python -I -S _init.pyc MODE STEP... -- PROGRAM ARG...``: the words of
:func:`passhat.sandbox.plan.words`, which computed every path list in the harness; this process only
executes the steps (their table: :data:`STEPS`; their meaning: ``init.c``'s header, the C PID 1 of the
namespaces mode, which does the same without an interpreter's start-up). Two modes:

``namespaces``: PID 1 of fresh user, mount, PID, network and IPC namespaces (``unshare`` makes them and
maps our user to root in the user namespace, which lets us change mounts there, and only there).

1. Join the bound cgroups (``tasks``: see :func:`join_cgroups`), while the file system is still writable.
2. Bring ``lo`` up, add the allowed hosts' addresses to it (netlink, IPv4 and IPv6), and listen on each
   forwarded address; a connection is passed on to a unix socket in a folder the program cannot see
   (reached through a descriptor opened before it was hidden), whose harness side decides what it reaches.
3. ``mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)`` on ``/``: one call makes every mount read-only.
4. The covers (the folders holding each writable folder, ``/dev/shm``, the hidden ones) get an empty
   tmpfs; the kept folders are bound back read-only, the writable ones read-write, the late covers
   (hidden folders inside a kept one) covered again, and the covers sealed read-only.
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
(``_socket``, ``_thread``: ``socket`` and ``threading`` would import ``enum`` and ``re``); with ``-I -S``
start-up stays at a few milliseconds.
"""

from __future__ import annotations

import _ctypes  # the C half of ctypes: importing ctypes itself costs ~5 ms of every confined start
import _signal as signal  # built in; the signal module imports enum
import os
import sys

TYPE_CHECKING = False  # mypy reads this name as true; importing typing here would cost the start it saves
if TYPE_CHECKING:
    from typing import NoReturn

SETUP_FAILED = 125
SYS_MOUNT_SETATTR = 442  # the same number on every architecture Linux added it to at once
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC = 0x2, 0x4, 0x1000, 0x4000
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 4, 24, 36, 38
LIMITS = {"fsize": "RLIMIT_FSIZE", "nproc": "RLIMIT_NPROC", "data": "RLIMIT_DATA"}
STEPS = {"cgroup": 1, "loopback": 0, "address": 1, "sockets": 1, "listen": 3, "writable": 1, "keep": 1,
         "hosts": 1, "cover": 2, "late": 2, "seal": 1, "cwd": 1, "limit": 2, "uid": 1}
"""Every step word and how many arguments follow it (``init.c`` has the same table; a test compares them)."""
Steps = dict[str, list[list[str]]]


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


def fail(what: str, reason: str | None = None) -> NoReturn:
    sys.stderr.write(f"passhat sandbox: {what}: {reason or os.strerror(_ctypes.get_errno())}\n")
    sys.exit(SETUP_FAILED)


def parse(words: list[str]) -> tuple[str, Steps, list[str]]:
    """``MODE STEP... -- PROGRAM ARG...`` → (mode, each step's argument lists, the program's argv)."""
    steps: Steps = {step: [] for step in STEPS}
    i = 1
    while i < len(words) and words[i] != "--":
        arity = STEPS.get(words[i])
        if arity is None or i + arity >= len(words):
            fail("spec", f"{'unknown step' if arity is None else 'missing words after'} {words[i]}")
        steps[words[i]].append(words[i + 1:i + 1 + arity])
        i += 1 + arity
    if not words or i + 1 >= len(words):
        fail("spec", "no program after --")
    if len(steps["cwd"]) != 1 or any(len(steps[s]) > 1 for s in ("sockets", "hosts", "uid")):
        fail("spec", "needs one cwd and at most one sockets, hosts and uid, in argv")
    return words[0], steps, words[i + 1:]


def up_loopback() -> None:
    import _socket
    import _struct
    import fcntl

    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        fcntl.ioctl(s.fileno(), 0x8914, _struct.pack("16sh", b"lo", 0x1 | 0x8 | 0x40))  # SIOCSIFFLAGS: UP|LOOPBACK|RUNNING
    except OSError as exc:
        fail("cannot bring lo up", exc.strerror)
    finally:
        s.close()


def family(ip: str) -> int:
    """``AF_INET`` or ``AF_INET6``, as the address's text says."""
    import _socket

    return _socket.AF_INET6 if ":" in ip else _socket.AF_INET


def add_address(ip: str) -> None:
    """``ip addr add IP/32 (or /128) dev lo`` through netlink (RTM_NEWADDR), for an allowed host's address."""
    import _socket
    import _struct

    try:
        addr = _socket.inet_pton(family(ip), ip)
    except OSError as exc:
        fail(f"cannot add address {ip} to lo", exc.strerror or "not an address")
    flags = 0x2 if family(ip) == _socket.AF_INET6 else 0  # IFA_F_NODAD: usable at once, not "tentative"
    body = _struct.pack("BBBBI", family(ip), len(addr) * 8, flags, 0, _socket.if_nametoindex("lo"))
    for attribute in (2, 1):  # IFA_LOCAL, IFA_ADDRESS
        body += _struct.pack("HH", 4 + len(addr), attribute) + addr
    header = _struct.pack("IHHII", 16 + len(body), 20, 0x1 | 0x4 | 0x400 | 0x200, 1, 0)  # RTM_NEWADDR, REQUEST|ACK|CREATE|EXCL
    s = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW, 0)
    try:
        s.sendto(header + body, (0, 0))
        reply = s.recv(4096)
    except OSError as exc:
        fail(f"cannot add address {ip} to lo", exc.strerror)
    finally:
        s.close()
    error = _struct.unpack_from("i", reply, 16)[0]
    if error not in (0, -17):  # EEXIST: two allowed names with one address
        fail(f"cannot add address {ip} to lo", os.strerror(-error))


def forward(host: str, port: int, target: str) -> None:
    """Accept on ``host:port`` (inside the namespace) and pass each connection on to the unix socket ``target``."""
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
            fd, _ = server._accept()  # type: ignore[attr-defined]  # the fd, without building a socket object
            client = _socket.socket(server.family, _socket.SOCK_STREAM, 0, fd)
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

    server = _socket.socket(family(host), _socket.SOCK_STREAM)
    try:
        server.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        if server.family == _socket.AF_INET6:
            server.setsockopt(_socket.IPPROTO_IPV6, _socket.IPV6_V6ONLY, 1)
        server.bind((host, port))
        server.listen(128)
    except OSError as exc:
        fail(f"cannot listen on {f'[{host}]' if ':' in host else host}:{port}", exc.strerror)
    _thread.start_new_thread(serve, (server,))


def make_mount_point(folder: str, handle: int, mode: int) -> None:
    """What a bind onto ``folder`` needs there: a folder (or, for a file, its folder and an empty file)."""
    if os.path.exists(folder):
        return
    try:
        if os.path.isdir(f"/proc/self/fd/{handle}"):
            os.makedirs(folder, mode, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(folder), 0o755, exist_ok=True)
            os.close(os.open(folder, os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError as exc:
        fail(f"cannot make {folder} in its cover", exc.strerror)


def confine_mounts(steps: Steps, libc: Libc) -> None:
    """Steps 3 and 4 of the module docstring."""
    def setattr_(path: str, flags: int, attr: MountAttr) -> int:
        return libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, os.fsencode(path), flags, _ctypes.byref(attr), _ctypes.sizeof(attr))

    def mount(source: str | None, target: str, fstype: bytes | None, flags: int, data: bytes | None, what: str) -> None:
        if libc.mount(source and os.fsencode(source), os.fsencode(target), fstype, flags, data) != 0:
            fail(what)

    writable = [folder for folder, in steps["writable"]]
    kept = [folder for folder, in steps["keep"]]
    try:
        handles = [os.open(f, os.O_PATH | os.O_DIRECTORY) for f in writable]  # still reachable once hidden
        kept_handles = [os.open(f, os.O_PATH) for f in kept]
    except OSError as exc:
        fail(f"cannot open {exc.filename}", exc.strerror)
    for hosts, in steps["hosts"]:
        mount(hosts, "/etc/hosts", None, MS_BIND, None, "cannot bind /etc/hosts")
    if setattr_("/", AT_RECURSIVE, MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)) != 0:
        fail("cannot make the file system read-only (mount_setattr)")
    for cover, options in steps["cover"]:
        mount("tmpfs", cover, b"tmpfs", MS_NOSUID | MS_NODEV, options.encode(), f"cannot cover {cover} with a tmpfs")
    for folder, handle in zip(kept, kept_handles, strict=True):  # the interpreter, the program: read-only as before
        make_mount_point(folder, handle, 0o755)
        mount(f"/proc/self/fd/{handle}", folder, None, MS_BIND | MS_REC, None, f"cannot bind {folder}")
        if setattr_(folder, AT_RECURSIVE, MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)) != 0:
            fail(f"cannot make {folder} read-only")
        os.close(handle)
    for folder, handle in zip(writable, handles, strict=True):
        make_mount_point(folder, handle, 0o700)
        mount(f"/proc/self/fd/{handle}", folder, None, MS_BIND, None, f"cannot bind {folder}")
        if setattr_(folder, 0, MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)) != 0:
            fail(f"cannot make {folder} writable")
        os.close(handle)
    for cover, options in steps["late"]:  # the run folder inside the agent's own (kept) working folder
        mount("tmpfs", cover, b"tmpfs", MS_NOSUID | MS_NODEV, options.encode(), f"cannot cover {cover} with a tmpfs")
    for cover, in steps["seal"]:
        if setattr_(cover, 0, MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)) != 0:
            fail(f"cannot make {cover} read-only")


def set_limits(limits: list[list[str]]) -> None:
    """The spec's rlimits, in the child: ``limit NAME VALUE`` (fsize, nproc, data)."""
    if not limits:
        return
    import resource

    for name, text in limits:
        try:
            value = int(text)
            resource.setrlimit(getattr(resource, LIMITS[name]), (value, value))
        except (KeyError, ValueError, OSError) as exc:
            fail(f"cannot set the {name} limit to {text}", getattr(exc, "strerror", None) or "Invalid argument")


def join_cgroups(folders: list[str]) -> None:
    """Move this process (and so the program) into each cgroup; never creates a file where none is.

    A single-threaded process writes ``0`` to ``tasks``: moving the calling thread alone skips the kernel's
    global threadgroup lock, whose writer waits for an RCU grace period (5-12 ms per join, measured; 0.1 ms
    this way). With more than one thread (none is started before this), ``cgroup.procs`` moves them all."""
    try:
        single = len(os.listdir("/proc/self/task")) == 1
    except OSError:
        single = False
    for folder in folders:
        try:
            fd = os.open(os.path.join(folder, "tasks" if single else "cgroup.procs"), os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
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


def run_program(argv: list[str], steps: Steps, libc: Libc) -> None:
    """The child: the spec's limits and uid, no capability, ``no_new_privs``, then the program."""
    try:
        for number in (signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):  # as a program started by a shell has them
            signal.signal(number, signal.SIG_DFL)
        set_limits(steps["limit"])
        for uid, in steps["uid"]:
            try:
                os.setgroups([])
                os.setgid(int(uid))
                os.setuid(int(uid))
            except OSError as exc:
                fail(f"cannot become uid {uid}", exc.strerror)
        if os.geteuid() == 0:
            drop_capabilities(libc)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            fail("cannot set no_new_privs")
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"passhat sandbox: cannot run {argv[0]}: {exc.strerror}\n".encode())
    os._exit(SETUP_FAILED)


def main() -> None:
    libc = Libc()
    mode, steps, argv = parse(sys.argv[1:])
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the program cannot read our memory or descriptors
    namespaces = mode == "namespaces"
    join_cgroups([folder for folder, in steps["cgroup"]])
    if namespaces:
        if steps["loopback"]:
            up_loopback()
        for address, in steps["address"]:
            add_address(address)
        for folder, in steps["sockets"]:
            try:
                sockets = os.open(folder, os.O_PATH | os.O_DIRECTORY)
            except OSError as exc:
                fail(f"cannot open {folder}", exc.strerror)
            for host, port, name in steps["listen"]:
                forward(host, int(port), f"/proc/self/fd/{sockets}/{name}")
        confine_mounts(steps, libc)
    else:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    cwd = steps["cwd"][0][0]
    try:
        os.chdir(cwd)  # again, through the new mounts: the inherited working folder is on the read-only one
    except OSError as exc:
        fail(f"cannot enter {cwd}", exc.strerror)
    if not namespaces:
        signal.signal(signal.SIGTERM, _stop)
    try:
        child = os.fork()
    except OSError:
        fail("cannot fork")
    if child == 0:
        run_program(argv, steps, libc)
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
