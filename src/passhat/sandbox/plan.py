"""What a confined program's PID 1 is told to do: the spec a caller fills in (:class:`Spec`), and the steps
it becomes (:func:`words`), computed here, once, in the harness.

Both PID 1s — ``init.c``, compiled, and :mod:`passhat.sandbox._init`, the Python one — only execute steps:
which folders are covered, bound back or covered again is decided in this module and nowhere else, so the
two cannot disagree about it. The steps are plain argv words (``MODE STEP... -- PROGRAM ARG...``, each
step a word and a fixed number of arguments: ``_init.STEPS``; their meaning: ``init.c``'s header): no escaping, no
parser to share, visible as they are in ``ps``. Rejected: a marshal or JSON document (C would need a
parser); a spec on an inherited descriptor (every caller would have to pass it through ``pass_fds``).
"""

from __future__ import annotations

import ipaddress
import os
import sys
from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["namespaces", "fallback"]
SHM = "/dev/shm"
COVER_OPTIONS = "size=1m,mode=755"
"""tmpfs options of a cover: a folder shown empty, with room only for the mount points made in it."""
SHM_OPTIONS = "size=64m,mode=1777"
"""tmpfs options of ``/dev/shm``: the program's own, usable as it expects."""
Limit = Literal["fsize", "nproc", "data"]


@dataclass
class Forward:
    """One address PID 1 listens on inside the namespace, and where each connection goes."""

    host: str
    """An IPv4 or IPv6 address: the tool server's (``127.0.0.1``), an allowed host's."""
    port: int
    """The port on that address."""
    socket: str
    """The name of the unix socket in :attr:`Spec.sockets` each connection is passed on to."""


@dataclass
class Spec:
    """What one confined program gets (:func:`passhat.sandbox.base_spec` fills in the usual)."""

    argv: list[str]
    """The program and its arguments (``execvp``: a bare name is looked up on the program's ``PATH``)."""
    cwd: str
    """Its working folder."""
    writable: list[str]
    """The only folders it may write (a workspace copy, its private HOME and TMPDIR)."""
    mode: Mode = "namespaces"
    """``namespaces``: PID 1 of fresh namespaces; ``fallback``: a subreaper (docs/design/021)."""
    hide: list[str] = field(default_factory=list)
    """Folders shown empty (the harness's ``$HOME``, run folders, the copies' parent)."""
    keep: list[str] = field(default_factory=list)
    """Folders (or files) it must see even inside a hidden one: its program, the passhat package."""
    forward: list[Forward] = field(default_factory=list)
    """Addresses it may connect to, each passed on to a unix socket in :attr:`sockets`."""
    sockets: str | None = None
    """The folder of the forwarders' unix sockets (hidden from the program itself)."""
    hosts_file: str | None = None
    """A file shown as ``/etc/hosts`` (the names of the allowed hosts)."""
    limits: dict[Limit, int | None] = field(default_factory=dict)
    """rlimits of the program (``None``: unbounded)."""
    cgroups: list[str] = field(default_factory=list)
    """cgroup folders PID 1 joins first (the program's process and memory bounds)."""
    uid: int | None = None
    """The uid (and gid) the program runs as (fallback as root: ``nobody``); ``None``: ours."""


def interpreter_folders() -> list[str]:
    """Folders the program needs to see wherever they are: this interpreter's installation, as called (a
    virtual environment's ``bin/python`` is a link out of it) and as resolved."""
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


def kept_inside(covers: list[str], keep: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The interpreter's folders and the spec's kept ones that a cover would hide: bound back read-only."""
    found = list(dict.fromkeys([*interpreter_folders(), *keep]))
    return [p for p in found if any(p.startswith(c + "/") for c in covers)]


def covers(writable: list[str], hide: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The folders to cover with an empty tmpfs: :func:`hidden_parents`, ``/dev/shm`` and ``hide``, leaving
    out any inside another (copies in ``/tmp/ws`` and a command folder in ``/tmp``: covering ``/tmp`` hides
    both, and covering ``/tmp/ws`` after it would fail, as covering ``/tmp`` after it would hide the first),
    and any folder holding a writable or interpreter folder only through ``hide`` (that is not hidden)."""
    ours = interpreter_folders()
    asked = [h for h in hide if os.path.isdir(h) and h != "/" and not any(_within(p, h) for p in [*writable, *ours])
             and not any(_within(h, w) for w in writable)]
    found = list(dict.fromkeys([*hidden_parents(writable), SHM, *asked]))
    return [c for c in found if not any(c.startswith(other + "/") for other in found)]


def _network(spec: Spec) -> list[str]:
    """lo up, the allowed hosts' addresses on it (loopback ones are there already), a listener each."""
    if not spec.forward:
        return []
    if spec.sockets is None:
        raise ValueError("a spec that forwards addresses needs its sockets folder")
    found = ["loopback", "sockets", spec.sockets]
    added: set[str] = set()
    for rule in spec.forward:
        address = ipaddress.ip_address(rule.host)  # a name here would be a harness bug: resolved already
        if not address.is_loopback and rule.host not in added:
            added.add(rule.host)
            found += ["address", rule.host]
        found += ["listen", rule.host, str(rule.port), rule.socket]
    return found


def _mounts(spec: Spec) -> list[str]:
    """Read-only everywhere; covers; the kept and the writable folders bound back; late covers; seals."""
    writable = [os.path.realpath(f) for f in spec.writable]
    hide = [os.path.realpath(f) for f in spec.hide]
    hidden = covers(writable, hide)
    kept = kept_inside(hidden, [os.path.realpath(k) for k in spec.keep])
    # a hidden folder inside a kept one (the run folder in an agent's working folder): covered once kept
    late = [h for h in hide if h not in hidden and os.path.isdir(h) and any(_within(h, k) for k in kept)
            and not any(_within(w, h) for w in writable)]
    found = [word for folder in writable for word in ("writable", folder)]
    found += [word for folder in kept for word in ("keep", folder)]
    found += ["hosts", spec.hosts_file] if spec.hosts_file else []
    found += [word for c in hidden for word in ("cover", c, SHM_OPTIONS if c == SHM else COVER_OPTIONS)]
    found += [word for c in late for word in ("late", c, COVER_OPTIONS)]
    return found + [word for c in [*hidden, *late] if c != SHM for word in ("seal", c)]


def words(spec: Spec) -> list[str]:
    """The argv after a PID 1's own name: ``MODE STEP... -- PROGRAM ARG...``."""
    found: list[str] = [spec.mode]
    found += [word for folder in spec.cgroups for word in ("cgroup", folder)]
    if spec.mode == "namespaces":
        found += _network(spec) + _mounts(spec)
    found += ["cwd", spec.cwd]
    found += [word for name, value in spec.limits.items() if value is not None for word in ("limit", name, str(value))]
    found += ["uid", str(spec.uid)] if spec.uid is not None else []
    return [*found, "--", *spec.argv]


__all__ = ["COVER_OPTIONS", "SHM", "SHM_OPTIONS", "Forward", "Limit", "Mode", "Spec", "covers",
           "hidden_parents", "interpreter_folders", "kept_inside", "words"]
