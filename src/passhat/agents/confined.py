"""The sandbox an agent's program runs in: ``cmd:`` agents and ``--isolate process`` workers (docs/design/021).

With namespaces (:mod:`passhat.sandbox`): the program sees a read-only file system without the run
folder, the temporary folder (other trials' copies and sandboxes), ``/dev/shm`` or the harness's
``$HOME``; its own ``/proc`` (the harness is not in it); a network with only its trial's tool server
(``127.0.0.1:PORT`` of its ``PASSHAT_*`` URLs, forwarded to a unix socket that serves that trial's
paths and nothing else) and the hosts the user allows (``--agent-allow-host``); no capabilities; and
it dies, with everything it started, when the trial ends. Without them, the fallback: a subreaper that
kills every descendant, another uid as root, the harness not dumpable. Either way the program's tree is
bounded (:mod:`passhat.agents.bounds`: processes, memory, file size), and a program that failed at a
bound is told apart (:meth:`Launch.exceeded`).

Either way the environment is only ``PATH``, ``HOME``, ``TMPDIR``, ``LANG``, the trial's ``PASSHAT_*``
variables and the variables the user names (``--agent-env NAME``): an API key reaches an agent because
someone passed it, never by accident.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import re
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from passhat import sandbox
from passhat.agents.bounds import AgentBounds
from passhat.errors import InfrastructureError, PasshatError
from passhat.sandbox.bounds import Bounded, confine
from passhat.serve import ToolServer, TrialEndpoint

IsolationKind = Literal["namespaces", "fallback", "none"]
NOBODY = 65534
"""The uid (and gid) a fallback agent runs as when passhat runs as root."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_allow_host(text: str) -> tuple[str, int]:
    """``HOST[:PORT]`` or ``[IPV6][:PORT]`` (port 443 when left out) → (host, port); bad input otherwise."""
    text = text.strip()
    expected = ("expected HOST or HOST:PORT (a name, an IPv4 address, or an IPv6 one in brackets), e.g. "
                "api.openai.com, 127.0.0.1:8080 or [::1]:8443")
    if text.startswith("["):
        host, closed, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else "443"
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise PasshatError(f"--agent-allow-host {text!r}: {host!r} in brackets is not an IPv6 address; "
                               f"{expected}") from None
        if not closed or rest not in ("", ":" + port):
            raise PasshatError(f"--agent-allow-host {text!r}: {expected}")
    else:
        host, sep, port = text.rpartition(":")
        if not sep:
            host, port = text, "443"
        if ":" in host:
            raise PasshatError(f"--agent-allow-host {text!r}: an IPv6 address goes in brackets, e.g. [::1]:8443")
        if not host or any(c in text for c in "/[] @"):
            raise PasshatError(f"--agent-allow-host {text!r}: {expected}")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise PasshatError(f"--agent-allow-host {text!r}: the port must be a number from 1 to 65535")
    return host, int(port)


def resolve(name: str, port: int) -> tuple[str, ...]:
    """The addresses an allowed host is reached at: itself if it is one, else its A and AAAA records.

    ``AI_ADDRCONFIG``: IPv6 addresses only where this machine has IPv6 itself. Otherwise a name with both
    records would be forwarded at its IPv6 address too, which the harness cannot reach: the agent's
    connection there is accepted in its namespace and then dropped, so it never falls back to IPv4."""
    try:
        return (str(ipaddress.ip_address(name)),)
    except ValueError:
        pass
    found = socket.getaddrinfo(name, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)
    # a scoped address (fe80::1%eth0) names an interface of this machine, not one in the agent's namespace
    return tuple(dict.fromkeys(str(a[4][0]) for a in found if "%" not in str(a[4][0])))


@dataclass(frozen=True)
class AllowedHost:
    """One host an agent may reach, resolved when the run starts."""

    name: str
    port: int
    addresses: tuple[str, ...]


@dataclass(frozen=True)
class AgentSandbox:
    """What the user lets an agent's program have beyond its trial: environment variables, hosts, and how
    much of the machine (its bounds)."""

    env: tuple[str, ...] = ()
    """Names of variables passed from passhat's environment (``--agent-env NAME``)."""
    allow_hosts: tuple[str, ...] = ()
    """``HOST[:PORT]`` the program may connect to (``--agent-allow-host``); nothing else but its tools."""
    bounds: AgentBounds = AgentBounds()
    """Processes, memory and file size its tree may take (``--agent-processes``, ``--agent-memory``,
    ``--agent-file-size``)."""
    hosts: tuple[AllowedHost, ...] = field(default=(), init=False, compare=False)

    def __post_init__(self) -> None:
        for name in self.env:
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise PasshatError(f"--agent-env {name!r}: expected the name of an environment variable (letters, "
                                   "digits, _), e.g. OPENAI_API_KEY")
        hosts = []
        for text in self.allow_hosts:
            name, port = parse_allow_host(text)
            try:
                addresses = resolve(name, port)
            except OSError as exc:
                raise PasshatError(f"--agent-allow-host {text!r}: cannot resolve {name!r}: {exc}") from None
            if not addresses:
                raise PasshatError(f"--agent-allow-host {text!r}: {name!r} has no address this machine can reach")
            hosts.append(AllowedHost(name, port, addresses))
        object.__setattr__(self, "hosts", tuple(hosts))

    def describe(self) -> dict[str, Any]:
        return {"env": list(self.env), "allow_hosts": list(self.allow_hosts), "bounds": self.bounds.describe()}


def confinement_available() -> sandbox.Available:
    """What :func:`passhat.sandbox.available` says, as passhat's bad-input error when it cannot be honoured."""
    try:
        return sandbox.available()
    except sandbox.SandboxError as exc:
        raise PasshatError(str(exc)) from None


def _pid1() -> tuple[sandbox.Pid1, str]:
    """:func:`passhat.sandbox.pid1`, as passhat's bad-input error (a bad ``PASSHAT_SANDBOX_INIT``)."""
    try:
        return sandbox.pid1()
    except sandbox.SandboxError as exc:
        raise PasshatError(str(exc)) from None


def agent_environment(variables: Mapping[str, str], names: tuple[str, ...], home: str, tmp: str) -> dict[str, str]:
    """The program's whole environment: a minimal base, the named variables and the trial's own."""
    env = {"PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
           "HOME": home, "TMPDIR": tmp, "LANG": "C.UTF-8"}
    env.update({name: os.environ[name] for name in names if name in os.environ})
    env.update(variables)
    return env


@dataclass
class Launch:
    """How to start one trial's program, and what isolation it has."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    kind: IsolationKind
    details: str
    bounds: AgentBounds = AgentBounds()
    bounded: Bounded | None = None

    def exceeded(self, exit_code: int, stderr: str) -> str | None:
        """Why a program that failed with ``exit_code`` and ``stderr`` did, when it reached a bound (the
        cgroups' counters, else its death signal or error message), naming the bound and its option."""
        return self.bounds.failure(self.bounded.hit(exit_code, stderr)) if self.bounded is not None else None

    @property
    def isolation(self) -> dict[str, str]:
        """What the trial record keeps (``TrialRecord.isolation``)."""
        return {"kind": self.kind, "details": self.details}


def _keep(argv: list[str]) -> list[str]:
    """Folders a program needs to see even inside a hidden folder: the passhat package (an isolated worker
    imports it) and a program given by path (:func:`program_folders`)."""
    import passhat

    kept = [os.path.dirname(os.path.dirname(os.path.realpath(passhat.__file__)))]
    for arg in argv:
        if os.path.isabs(arg) and os.path.exists(arg):
            kept += [p for p in program_folders(arg) if p not in kept]
    return kept


def program_folders(path: str) -> list[str]:
    """What a program named by path needs to run: the path as given and as resolved, and, for an
    interpreter in a virtual environment (``…/venv/bin/python``, a link out of the environment), the
    environment and the installation it was made from (its ``pyvenv.cfg`` ``home``). Without the
    environment, an agent's own venv in the temporary folder or in ``$HOME`` (both hidden) would start as
    the bare base interpreter, or not at all."""
    folders = list(dict.fromkeys([os.path.abspath(path), os.path.realpath(path)]))
    venv = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    config = os.path.join(venv, "pyvenv.cfg")
    if os.path.isfile(config):
        folders.append(os.path.realpath(venv))
        with open(config, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, _, value = line.partition("=")
                if key.strip() == "home" and os.path.isdir(value.strip()):
                    folders.append(os.path.dirname(os.path.realpath(value.strip())))  # …/bin → the installation
    return list(dict.fromkeys(folders))


def _open_to_others(path: str) -> bool:
    """Whether another user can reach ``path``: every folder above it searchable, it readable, by others."""
    import stat

    path = os.path.realpath(path)
    try:
        if not os.stat(path).st_mode & stat.S_IROTH:
            return False
        while path != "/":
            path = os.path.dirname(path)
            if not os.stat(path).st_mode & stat.S_IXOTH:
                return False
    except OSError:
        return False
    return True


@contextlib.asynccontextmanager
async def launch(argv: list[str], variables: Mapping[str, str], endpoint: TrialEndpoint, server: ToolServer,
                 options: AgentSandbox) -> AsyncIterator[Launch]:
    """Everything one trial's confined program needs while it runs (its folders, its sockets); removed after."""
    mode = await asyncio.to_thread(confinement_available)  # probed once, but that once must not block the loop
    sandbox.make_harness_undumpable()
    private = tempfile.mkdtemp(prefix="passhat-agent-")
    sockets = tempfile.mkdtemp(prefix="passhat-agent-sock-")
    bounded: Bounded | None = None
    try:
        home, tmp = os.path.join(private, "home"), os.path.join(private, "tmp")
        os.mkdir(home)
        os.mkdir(tmp)
        env = agent_environment(variables, options.env, home, tmp)
        cwd = os.getcwd()
        if mode == "unshare":
            async with contextlib.AsyncExitStack() as stack:
                spec = sandbox.base_spec(argv, cwd, [private])
                spec.keep = [cwd, *_keep(argv)]
                spec.sockets = sockets
                tools = urlsplit(endpoint.url)
                assert tools.hostname and tools.port, endpoint.url  # the tool server's own http://ADDRESS:PORT/...
                await stack.enter_async_context(server.unix_socket(endpoint, os.path.join(sockets, "tools.sock")))
                spec.forward = [sandbox.Forward(tools.hostname, tools.port, "tools.sock")]
                spec.hosts_file = await _allow(stack, options, sockets, spec.forward)
                allowed = ", ".join(options.allow_hosts) or "no other host"
                bounded = await asyncio.to_thread(confine, spec, options.bounds.to_bounds())
                which, pid1 = _pid1()
                details = (f"user, mount, PID, network namespaces; no capabilities; reaches its tools and {allowed}; "
                           f"{pid1}; bounds: {bounded.describe()}")
                yield Launch(sandbox.launch_argv(spec, which), env, cwd, "namespaces", details, options.bounds, bounded)
        else:
            spec = sandbox.base_spec(argv, cwd, [private], mode="fallback")
            root = os.geteuid() == 0
            uid = NOBODY if root and all(_open_to_others(p) for p in [*_keep(argv)[1:], cwd]) else None
            spec.uid = uid
            if uid is not None:
                for folder in (private, home, tmp):
                    os.chown(folder, uid, uid)
            who = (f"uid {uid}" if uid is not None else "root without capabilities (nobody cannot reach the program)"
                   if root else "passhat's own user")
            bounded = await asyncio.to_thread(confine, spec, options.bounds.to_bounds())
            details = (f"fallback ({sandbox.available_note()}): runs as {who}, harness not dumpable, every "
                       f"descendant killed at the end; network and files not confined; bounds: {bounded.describe()}")
            yield Launch(sandbox.launch_argv(spec), env, cwd, "fallback", details, options.bounds, bounded)
    finally:
        try:
            if bounded is not None:  # whatever is left in its cgroups is killed before its folders go
                await bounded.release_in_thread()
        finally:  # and they go even when the trial is cancelled meanwhile (a run stopped)
            from passhat.workspace._fs import remove_tree

            for folder in (private, sockets):
                with contextlib.suppress(OSError):
                    remove_tree(folder)


async def _allow(stack: contextlib.AsyncExitStack, options: AgentSandbox, sockets: str,
                 forward: list[sandbox.Forward]) -> str | None:
    """Relay every allowed host's addresses (forward rules, harness-side sockets); the namespace's
    ``/etc/hosts``, naming them, when any is a name."""
    from passhat.sandbox.relay import relay

    lines = ["127.0.0.1 localhost"]
    for host in options.hosts:
        for address in host.addresses:
            if any(r.host == address and r.port == host.port for r in forward):
                continue
            name = f"allow-{len(forward)}.sock"
            try:
                listener = await relay(os.path.join(sockets, name), address, host.port)
            except OSError as exc:
                raise InfrastructureError(f"cannot relay {host.name}:{host.port}: {exc.strerror or exc}") from exc
            stack.callback(listener.close)
            forward.append(sandbox.Forward(address, host.port, name))
            if host.name != address:
                lines.append(f"{address} {host.name}")
    if len(lines) == 1:
        return None
    path = os.path.join(sockets, "hosts")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


__all__ = ["AgentSandbox", "AllowedHost", "IsolationKind", "Launch", "agent_environment", "launch",
           "parse_allow_host"]
