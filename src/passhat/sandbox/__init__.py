"""Confinement for the processes passhat starts on an agent's behalf: workspace commands and agents.

One machine (a PID 1 that sets up the confinement and runs the program) and one way to start it
(:func:`launch_argv`), used by :mod:`passhat.workspace.sandbox` for ``run_command`` and by
:mod:`passhat.agents.confined` for ``cmd:`` and ``--isolate process`` agents (docs/design/021). What the
PID 1 does is computed here (:mod:`passhat.sandbox.plan`); two programs execute it: ``init.c``, compiled on
first use (:mod:`passhat.sandbox.native`), for the namespaces, and :mod:`passhat.sandbox._init`, in
Python, for the fallback and wherever the C one cannot be built.

Two levels, probed once per process by :func:`probe`:

- ``unshare``: fresh user, mount, PID, network and IPC namespaces (util-linux ``unshare``; no root, no
  daemon): a read-only file system but for the program's own folders, the temporary folder, ``/dev/shm``,
  the harness's ``$HOME`` and every folder :func:`hide` registered (run folders, copies) shown empty, no
  network but what is forwarded, no capabilities, nothing outliving it.
- ``none``: where user namespaces are unavailable. Commands then only get a scrubbed environment; agents
  get the fallback of :mod:`passhat.sandbox._init` (a subreaper, another uid as root, the harness not
  dumpable).

``PASSHAT_SANDBOX=none`` forces the fallback, ``PASSHAT_SANDBOX=unshare`` makes its absence an error.
``PASSHAT_SANDBOX_INIT=c`` or ``python`` forces a PID 1 for the namespaces (``c`` where it cannot be built
is an error); unset, the C one is used where it builds and passes the probe.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Literal

from passhat.sandbox import native
from passhat.sandbox.plan import Forward, Mode, Spec, words

Available = Literal["unshare", "none"]
Pid1 = Literal["c", "python"]
SANDBOX_ENV = "PASSHAT_SANDBOX"
"""Environment variable: ``none`` forces the fallback, ``unshare`` requires the sandbox, ``auto``
(or unset) uses the sandbox when this machine offers it."""
INIT_ENV = "PASSHAT_SANDBOX_INIT"
"""Environment variable: ``c`` or ``python``, the PID 1 of the namespaces; ``auto`` (or unset): the C one
where it can be built and works, else the Python one."""
INIT = str(Path(__file__).with_name("_init.py"))
SETUP_FAILED = 125  # _init.SETUP_FAILED; not imported, that file runs as a script
PR_SET_DUMPABLE = 4

_hidden: dict[str, None] = {}
_c_probe_failure: list[str] = []  # why the C PID 1 failed this process's probe (then the Python one is used)


class SandboxError(Exception):
    """The sandbox cannot be used as asked (raised as the caller's own error type by the callers)."""


def hide(path: str | os.PathLike[str]) -> None:
    """Show ``path`` empty to every confined program started from now on (a run folder, the copies' parent)."""
    _hidden[os.path.realpath(path)] = None


def unhide(path: str | os.PathLike[str]) -> None:
    """Undo :func:`hide` (a run that ended)."""
    _hidden.pop(os.path.realpath(path), None)


def hidden() -> list[str]:
    """What every sandbox covers beyond the temporary folder and ``/dev/shm``: the harness's ``$HOME`` (its
    keys and configuration) and the registered folders."""
    home = os.path.realpath(os.path.expanduser("~"))
    return [*([home] if home not in ("/", "") and os.path.isdir(home) else []), *_hidden]


@functools.cache
def make_harness_undumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: this process's ``/proc/<pid>/mem``, ``environ`` and ``fd`` are closed to
    every process without ``CAP_SYS_PTRACE`` (an agent's program), even one of the same user. Once per process;
    core dumps of the harness are lost with it, which is the point."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


@functools.cache
def _compiled_init() -> str:
    """:mod:`passhat.sandbox._init` compiled once (Python runs a ``.pyc`` given as the script): a script is
    compiled at every start, which cost more than all the rest of the sandbox's set-up."""
    import importlib.util
    import py_compile

    cached = importlib.util.cache_from_source(INIT)
    try:  # with doraise, compile returns the file written or raises (its None is for doraise=False)
        return py_compile.compile(INIT, cfile=cached, doraise=True) or INIT
    except (OSError, py_compile.PyCompileError):
        try:
            folder = tempfile.mkdtemp(prefix="passhat-init-")
            os.chmod(folder, 0o755)  # a fallback agent may run as another user
            return py_compile.compile(INIT, cfile=os.path.join(folder, "_init.pyc"), doraise=True) or INIT
        except (OSError, py_compile.PyCompileError):
            return INIT


def pid1() -> tuple[Pid1, str]:
    """(which PID 1 runs the namespaces, what the report says of it), as ``PASSHAT_SANDBOX_INIT`` asks."""
    wanted = os.environ.get(INIT_ENV, "").strip().lower()
    if wanted not in ("", "auto", "c", "python"):
        raise SandboxError(f"environment variable {INIT_ENV}={wanted!r} is not one of auto, c, python")
    if wanted == "python":
        return "python", f"Python PID 1 ({INIT_ENV}=python)"
    built = native.build()
    if built.path is None:
        if wanted == "c":
            raise SandboxError(f"environment variable {INIT_ENV}=c, but the C PID 1 cannot be had: {built.note}")
        return "python", f"Python PID 1: {built.note}"
    if wanted != "c" and _c_probe_failure:
        return "python", f"Python PID 1: the C PID 1 failed the probe: {_c_probe_failure[0]}"
    return "c", built.note


def _init_argv(which: Pid1) -> list[str]:
    if which == "c":
        path = native.build().path
        assert path is not None  # pid1() said "c"
        return [path]
    return [sys.executable, "-I", "-S", _compiled_init()]


def launch_argv(spec: Spec, which: Pid1 | None = None) -> list[str]:
    """The argv that runs ``spec`` under its PID 1 (``which``, else :func:`pid1`'s; the fallback: Python's)."""
    if spec.mode == "fallback":
        return [*_init_argv("python"), *words(spec)]
    init = _init_argv(which or pid1()[0])
    # --pdeathsig: if the harness dies without cleaning up (SIGKILL, the OOM killer), unshare is killed, its
    # --kill-child kills the namespace's PID 1, and with it everything the program started
    return [shutil.which("setpriv") or "setpriv", "--pdeathsig", "KILL", shutil.which("unshare") or "unshare",
            "--user", "--map-root-user", "--net", "--mount", "--ipc", "--pid", "--fork", "--kill-child", "--mount-proc",
            *init, *words(spec)]


def base_spec(argv: list[str], cwd: str, writable: list[str], *, mode: Mode = "namespaces") -> Spec:
    """The spec every confined program starts from: read-only but ``writable``, the usual folders hidden."""
    return Spec(argv=argv, cwd=cwd, writable=writable, mode=mode, hide=hidden())


def _try(which: Pid1) -> str | None:
    """Run a real confined command with that PID 1: why it failed, or ``None``."""
    with tempfile.TemporaryDirectory(prefix="passhat-probe-") as tmp:
        inside, outside = os.path.join(tmp, "in"), os.path.join(tmp, "out")
        os.mkdir(inside)
        os.mkdir(outside)
        check = 'echo ok > probe && ! (echo leak > "$1/leak") 2>/dev/null'
        spec = base_spec(["/bin/sh", "-c", check, "sh", outside], inside, [inside])
        try:
            done = subprocess.run(launch_argv(spec, which), cwd=inside, env={"PATH": "/usr/bin:/bin"},
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"unshare did not run: {exc}"
        confined = os.path.exists(os.path.join(inside, "probe")) and not os.path.exists(os.path.join(outside, "leak"))
        if done.returncode != 0 or not confined:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            return f"unshare sandbox failed (exit {done.returncode}): {lines[-1] if lines else 'no message'}"
    return None


@functools.cache
def probe() -> tuple[Available, str]:
    """(what works here, why not ``unshare`` if it does not): runs a real confined command once. A C PID 1
    that fails where the Python one works is not used (unless forced) and the report says why."""
    _c_probe_failure.clear()
    if shutil.which("unshare") is None or shutil.which("setpriv") is None:
        return "none", "util-linux 'unshare' and 'setpriv' are not both on PATH"
    which = pid1()[0]
    why = _try(which)
    if why is not None and which == "c" and os.environ.get(INIT_ENV, "").strip().lower() != "c":
        _c_probe_failure.append(why)
        why = _try("python")
    if why is not None:
        return "none", why
    return "unshare", "user, mount, PID, network and IPC namespaces; read-only file system but for the copy"


def available() -> Available:
    """The isolation this machine offers (probed once per process), or what ``PASSHAT_SANDBOX`` forces."""
    wanted = os.environ.get(SANDBOX_ENV, "").strip().lower()
    if wanted == "none":
        return "none"
    if wanted not in ("", "auto", "unshare"):
        raise SandboxError(f"environment variable {SANDBOX_ENV}={wanted!r} is not one of auto, unshare, none")
    found, why = probe()
    if wanted == "unshare" and found != "unshare":
        raise SandboxError(f"environment variable {SANDBOX_ENV}=unshare, but this machine has no working sandbox: {why}")
    if found == "unshare":
        pid1()  # a bad PASSHAT_SANDBOX_INIT is bad input now, not at the first trial
    return found


def available_note() -> str:
    """Why :func:`available` is what it is, in one line for a report (with the PID 1 the namespaces have)."""
    if os.environ.get(SANDBOX_ENV, "").strip().lower() == "none":
        return f"{SANDBOX_ENV}=none: commands run without network or write confinement"
    found, why = probe()
    return f"{why}; {pid1()[1]}" if found == "unshare" else why


__all__ = ["INIT", "INIT_ENV", "SANDBOX_ENV", "SETUP_FAILED", "Available", "Forward", "Pid1", "SandboxError", "Spec",
           "available", "available_note", "base_spec", "hidden", "hide", "launch_argv", "make_harness_undumpable",
           "pid1", "probe", "unhide"]
