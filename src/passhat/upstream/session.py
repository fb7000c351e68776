"""Upstream servers over a run: listed once, then started once per trial on that trial's world.

The listing is the run's: a server is started on a scratch world of the domain's first fixture, its
tools are read and their schemas checked, and it is stopped. Every problem there — a command that does
not start, a server that exits or hangs, a schema that is not JSON Schema, a tool name two sources
share — is bad input (:class:`DomainError`, exit 2) before any trial runs. Each trial then starts its own
server with its own world in the command and environment (:class:`TrialUpstreams`).
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from passhat.errors import DomainError, InfrastructureError
from passhat.tools.declare import Tool
from passhat.upstream.config import Upstream
from passhat.upstream.connection import BASE_ENV, Connection, Launch, free_port
from passhat.upstream.log import UpstreamLog
from passhat.upstream.placeholders import fill, names_in, trial_values, world_values
from passhat.upstream.schema import argument_check
from passhat.upstream.tools import UpstreamError, UpstreamTool, bind, upstream_tool


def launch_for(upstream: Upstream, values: dict[str, str], cwd: Path | None) -> Launch:
    """The upstream's command, URL, environment and headers with this trial's values filled in."""
    where = f"upstream server {upstream.name!r}"
    values = dict(values)
    templates = [upstream.target, upstream.start or "", *upstream.env.values(), *upstream.headers.values()]
    if any("port" in names_in(t) for t in templates):
        values["port"] = str(free_port())
    env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
    env.update({k: fill(v, values, f"{where}: env {k}") for k, v in upstream.env.items()})
    headers = {k: fill(v, values, f"{where}: headers {k}") for k, v in upstream.headers.items()}
    folder = str(upstream.cwd if upstream.cwd is not None else cwd) if (upstream.cwd or cwd) else None
    common: dict[str, Any] = {"name": upstream.name, "env": env, "cwd": folder, "timeout": upstream.timeout,
                              "start_timeout": upstream.start_timeout}
    if upstream.transport == "stdio":
        command = [fill(word, values, f"{where}: command") for word in upstream.command()]
        return Launch(transport="stdio", command=command, **common)
    if upstream.shared:  # one server for the run, started on first use; each trial opens its own session
        from passhat.upstream.shared import shared_server

        server = shared_server(upstream, values, env, folder, int(values.get("port") or free_port()))
        values["port"] = str(server.port)
        return Launch(transport="http", url=fill(upstream.target, values, f"{where}: url"), headers=headers,
                      shared_stderr=str(server.stderr_path), **common)
    start = [fill(word, values, f"{where}: start") for word in shlex.split(upstream.start)] if upstream.start else []
    return Launch(transport="http", command=start, url=fill(upstream.target, values, f"{where}: url"),
                  headers=headers, **common)


class TrialUpstreams:
    """The upstream servers of one trial: begun at the start, bound into the trial's tools, closed before
    the world is diffed (a server may hold the database open), their logs kept in the record."""

    def __init__(self, upstreams: Iterable[Upstream], world: Any, *, identity: str | None, seed: int,
                 cwd: Path | None) -> None:
        values = trial_values(world, identity=identity, seed=seed)
        self.upstreams = list(upstreams)
        self.connections = {u.name: Connection(launch_for(u, values, cwd)) for u in self.upstreams}
        self.logs: list[UpstreamLog] = []

    def begin(self) -> None:
        """Start every server in the background: the first call of each waits for its server."""
        for connection in self.connections.values():
            connection.begin()

    def bind(self, tools: list[Tool]) -> list[Tool]:
        """The trial's tools with each upstream tool forwarding to this trial's server."""
        forwards = {name: c.call for name, c in self.connections.items()}
        denied = {u.name: re.compile(u.denied) for u in self.upstreams}
        return bind(tools, forwards, denied)

    async def close(self) -> list[UpstreamLog]:
        """Stop the servers; their logs. A server that never started makes the trial an infrastructure
        error (:class:`InfrastructureError`), after the record of what the agent did is complete."""
        self.logs = list(await asyncio.gather(*(c.close() for c in self.connections.values())))
        return self.logs

    def start_failure(self) -> str | None:
        """Why a server of this trial did not start, if one did not."""
        return next((log.failed_to_start for log in self.logs if log.failed_to_start), None)

    def raise_if_not_started(self) -> None:
        failure = self.start_failure()
        if failure is not None:
            raise InfrastructureError(failure)


def list_tools(upstreams: list[Upstream], *, domain: str, native: Iterable[str], world: Any,
               cwd: Path | None) -> dict[str, UpstreamTool]:
    """Every upstream's tools, listed by a server started on ``world`` (then stopped), schemas checked.

    Blocking; it runs the servers on an event loop of its own in a thread, so it works from plain code
    (loading a suite) and from inside a running loop alike. The world is only read for its placeholders.
    """
    values = trial_values(world, identity=None, seed=0)
    try:
        launches = [(u, launch_for(u, values, cwd)) for u in upstreams]
    except DomainError as exc:
        raise DomainError(f"domain {domain!r}: {exc}") from None
    listed: dict[str, list[Any]] = {}
    failure: list[BaseException] = []

    async def start_all() -> None:
        connections = [(u, Connection(launch)) for u, launch in launches]
        try:
            for u, connection in connections:
                try:
                    await connection.ready()
                except UpstreamError as exc:
                    raise DomainError(f"domain {domain!r}: {exc}") from None
                listed[u.name] = connection.listed
        finally:
            await asyncio.gather(*(c.close() for _, c in connections))

    def in_thread() -> None:
        try:
            asyncio.run(start_all())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=in_thread, name="passhat-upstream-listing", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return _tools_of(upstreams, listed, domain=domain, native=set(native), values=world_values(world))


def _tools_of(upstreams: list[Upstream], listed: dict[str, list[Any]], *, domain: str,
              native: set[str], values: dict[str, str]) -> dict[str, UpstreamTool]:
    out: dict[str, UpstreamTool] = {}
    for u in upstreams:
        names = [t.name for t in listed[u.name]]
        for option, given in (("kinds", u.kinds), ("idempotent", u.idempotent or ())):
            unknown = sorted(set(given) - set(names))
            if unknown:
                raise DomainError(f"domain {domain!r}: upstream server {u.name!r}: {option} names {unknown[0]!r}, "
                                  f"which it does not list; it lists: {', '.join(sorted(names)) or 'no tools'}")
        for t in listed[u.name]:
            where = f"domain {domain!r}: upstream server {u.name!r}: tool {t.name!r}"
            if t.name in native:
                raise DomainError(f"{where}: a native @tool has the same name; rename one of them")
            if t.name in out:
                raise DomainError(f"{where}: upstream server {out[t.name].server!r} lists a tool of the same name")
            notes = t.annotations
            kind = u.kinds.get(t.name) or ("read" if notes is not None and notes.read_only_hint else "write")
            idempotent = (t.name in u.idempotent if u.idempotent is not None
                          else bool(notes is not None and notes.idempotent_hint))
            try:
                check = argument_check(u.name, t.name, t.input_schema)
            except DomainError as exc:
                raise DomainError(f"domain {domain!r}: {exc}") from None
            out[t.name] = upstream_tool(u.name, t, check, kind=kind, idempotent=idempotent, listing_values=values)
    return out
