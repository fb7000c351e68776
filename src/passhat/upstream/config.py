"""``Upstream(...)``: how to reach a team's own MCP server, as a domain declares it.

Plain data, checked when the domain is built (a typo in the target is bad input at load time, before
any server starts). Nothing here imports the ``mcp`` SDK: a domain file that names an upstream loads
as cheaply as any other, and the SDK is imported only when a server is started (connection.py).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from passhat.errors import DomainError
from passhat.tools.declare import ToolKind

Transport = Literal["stdio", "http"]

DEFAULT_DENIED = r"(?i)\b(?:permission|access) denied\b[\s:.-]*"
"""An upstream error whose text matches this is recorded as ``denied`` (the identity may not do it),
not as a business ``tool_error``: MCP has no status for it, so the server's own words decide."""


@dataclass(frozen=True)
class Upstream:
    """A team's MCP server whose tools the agent calls, started once per trial on that trial's world.

    ``target`` is ``"stdio:COMMAND ARGS"`` (passhat starts the command and speaks MCP on its stdin and
    stdout) or ``"http://HOST:PORT/PATH"`` (streamable HTTP; with ``start=`` passhat starts that command
    per trial first, otherwise the server is one you run, shared by every trial). The command, ``env``,
    ``start`` and ``headers`` may use placeholders filled per trial: ``{workspace}``, ``{sqlite_path}``,
    ``{database_url}`` (the trial's world), ``{identity}`` and ``{seed}`` (the trial), ``{now}`` (the
    fixture's start time), ``{python}`` (this interpreter), ``{port}`` (a free port, for ``start``).
    """

    target: str
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables for the server process, on top of a scrubbed one (PATH, HOME, ...)."""
    name: str = ""
    """How messages and records name the server (default: the command's or host's name)."""
    kinds: Mapping[str, ToolKind] = field(default_factory=dict)
    """Read/write kind per tool, overriding the server's ``readOnlyHint`` annotation (absent: write)."""
    idempotent: Iterable[str] | None = None
    """Tools whose repeat with the same arguments is harmless (default: those annotated ``idempotentHint``)."""
    start: str | None = None
    """For an ``http://`` target: the command that starts the server of one trial (placeholders apply)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """For an ``http://`` target: request headers (placeholders apply), e.g. a bearer token."""
    shared: bool = False
    """For an ``http://`` target with ``start=``: start the server once for the whole run, not per trial. It
    must tell trials apart by what each request carries (``headers=`` with ``{database_url}``, ...); the
    start command may then use only ``{python}`` and ``{port}``."""
    cwd: str | Path | None = None
    """Working folder of the server process (default: the domain's folder)."""
    timeout: float = 30.0
    """Seconds a tool call may take before the agent gets a tool error (the server hung)."""
    start_timeout: float = 30.0
    """Seconds the server may take to start and list its tools."""
    denied: str = DEFAULT_DENIED
    """Regular expression on an error's text that makes the call ``denied`` rather than ``tool_error``."""

    def __post_init__(self) -> None:
        where = f"mcp=Upstream({self.target!r})"
        if not isinstance(self.target, str) or not (self.target.startswith("stdio:") or _is_http(self.target)):
            raise DomainError(f"{where}: the target is 'stdio:COMMAND ARGS' or 'http://HOST:PORT/PATH'")
        if self.transport == "stdio":
            try:
                words = shlex.split(self.target[len("stdio:"):])
            except ValueError as exc:
                raise DomainError(f"{where}: cannot split the command: {exc}") from None
            if not words:
                raise DomainError(f"{where}: no command after 'stdio:'")
            if self.start is not None:
                raise DomainError(f"{where}: start= is for http:// targets (a stdio command is started already)")
        if self.shared:
            from passhat.upstream.placeholders import names_in

            if self.transport != "http" or self.start is None:
                raise DomainError(f"{where}: shared=True is for an http:// target passhat starts (start=...)")
            per_trial = sorted(names_in(self.start) - {"python", "port"})
            if per_trial:
                raise DomainError(f"{where}: shared=True: the start command is run once for every trial, so it "
                                  f"cannot use {{{per_trial[0]}}}; send it per trial in headers= instead")
        bad_env = [k for k, v in dict(self.env).items() if not (isinstance(k, str) and k and "=" not in k and isinstance(v, str))]
        if bad_env:
            raise DomainError(f"{where}: env: {bad_env[0]!r} is not NAME=text (names and values are strings)")
        bad_kind = [k for k, v in dict(self.kinds).items() if v not in ("read", "write")]
        if bad_kind:
            raise DomainError(f"{where}: kinds: {bad_kind[0]!r} is {dict(self.kinds)[bad_kind[0]]!r}; use 'read' or 'write'")
        if self.timeout <= 0 or self.start_timeout <= 0:
            raise DomainError(f"{where}: timeout and start_timeout are seconds > 0")
        try:
            re.compile(self.denied)
        except re.error as exc:
            raise DomainError(f"{where}: denied: not a regular expression: {exc}") from None
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "kinds", dict(self.kinds))
        object.__setattr__(self, "headers", dict(self.headers))
        if self.idempotent is not None:
            object.__setattr__(self, "idempotent", tuple(self.idempotent))
        if not self.name:
            object.__setattr__(self, "name", self._default_name())

    @property
    def transport(self) -> Transport:
        return "stdio" if self.target.startswith("stdio:") else "http"

    def command(self) -> list[str]:
        """The stdio command as words, placeholders not yet filled (each word is filled on its own, so a
        path with spaces stays one argument)."""
        return shlex.split(self.target[len("stdio:"):])

    def _default_name(self) -> str:
        if self.transport == "http":
            return re.sub(r"^https?://", "", self.target).split("/")[0]
        words = self.command()
        runner = Path(words[0]).name
        # "python server.py", "node index.js", "npx -y pkg": the script or package names the server
        if len(words) > 1 and (runner.startswith(("python", "node", "{python}", "uv", "npx", "bun", "deno"))):
            rest = [w for w in words[1:] if not w.startswith("-")]
            if rest:
                return Path(rest[0]).name
        return runner

    def describe(self) -> str:
        """What the hash covers of this declaration (placeholders unfilled, so it is the same every run)."""
        parts = [self.target, f"env={sorted(self.env.items())}", f"kinds={sorted(self.kinds.items())}",
                 f"idempotent={sorted(self.idempotent) if self.idempotent is not None else None}",
                 f"start={self.start}", f"shared={self.shared}", f"denied={self.denied}",
                 f"headers={sorted(self.headers.items())}"]
        return " ".join(parts)


def _is_http(target: str) -> bool:
    return isinstance(target, str) and re.match(r"^https?://[^/\s]+", target) is not None


def upstream_list(mcp: Upstream | Iterable[Upstream] | None, domain: str) -> list[Upstream]:
    """``Domain(mcp=...)`` as a list: one upstream, several, or none; each a declared :class:`Upstream`."""
    if mcp is None:
        return []
    items = [mcp] if isinstance(mcp, Upstream) else list(mcp)
    for item in items:
        if not isinstance(item, Upstream):
            raise DomainError(f"domain {domain!r}: mcp: {item!r} is not an Upstream('stdio:COMMAND' | 'http://URL')")
    names = [u.name for u in items]
    if len(set(names)) != len(names):
        raise DomainError(f"domain {domain!r}: mcp: two upstream servers are named {names!r}; give each a name=")
    return items
