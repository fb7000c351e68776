"""One running upstream MCP server and the client session to it, with the official ``mcp`` SDK's session.

The transports (passhat's own over stdio, :mod:`passhat.upstream.stdio`; the SDK's over HTTP) are async
context managers that must be entered and left in one task, while a trial's tool calls come from the
agent's task. So a connection owns a task of its own: it starts the server, runs ``initialize`` and
``tools/list``, signals ready, and holds the session open until :meth:`Connection.close`. Starting is
begun at the start of a trial and awaited by the first call, so the server's start-up overlaps whatever
the agent does first (a model call, typically).

Everything that goes wrong is turned into words naming the server and the tool: the process cannot be
started, exits, hangs, writes what is not JSON-RPC on its stdout (the transport hands such a line to the
message handler, which keeps it here so a later time-out can say what came instead), or writes a line
longer than the cap (:mod:`passhat.upstream.stdio`). The server's stderr goes to a temporary file and
is kept, bounded, in the trial's record.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import urlsplit

from passhat import capped_http
from passhat.upstream.log import UpstreamLog, bounded_text
from passhat.upstream.tools import UpstreamError

MAX_TOOLS = 1000
"""The most tools one server may list: providers take 128 per request, real servers list dozens; 100,000
listed took 90 s and 2 GB to check and bind before this bound."""
PROBLEMS_KEPT = 20
"""Protocol problems (lines that are not JSON-RPC, ...) kept per connection."""
BASE_ENV = ("HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER")
"""What a server inherits of passhat's environment (then its own ``env``): no credentials by accident."""


@dataclass
class Launch:
    """One start of one server, placeholders filled: what to run and how to reach it."""

    name: str
    transport: str
    command: list[str] = field(default_factory=list)
    """stdio: the server's command; http: the ``start`` command (empty for a server you run)."""
    url: str = ""
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float = 30.0
    start_timeout: float = 30.0
    shared_stderr: str | None = None
    """A shared server's stderr file (the run's, not this trial's)."""

    def shown(self) -> str:
        return " ".join(self.command) if self.transport == "stdio" else self.url


def free_port() -> int:
    """A TCP port free on loopback now (for ``{port}``; the server binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Connection:
    """A started upstream server (one trial's, or the one that lists the tools for the run)."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.problems: list[str] = []
        self.listed: list[Any] = []
        """The server's ``tools/list`` (``mcp_types.Tool``), read once it started."""
        self.start_ms = 0.0
        self._stderr: IO[str] | None = None
        """The server's stderr, from :meth:`begin` until :meth:`close` reads it into the log and closes it."""
        self._closed_log: UpstreamLog | None = None
        self._session: Any = None
        self._failure: str | None = None
        self._too_large: str | None = None
        """Set when an answer over HTTP went past the cap: the SDK then reports only a closed connection."""
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._process: asyncio.subprocess.Process | None = None

    # --- lifecycle -------------------------------------------------------------------------------

    def begin(self) -> None:
        """Start the server in the background (the first call waits for it)."""
        if self._task is None and self._closed_log is None:
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace", prefix="passhat-mcp-")
            self._task = asyncio.ensure_future(self._own())

    async def ready(self) -> Any:
        """The initialized client session; :class:`UpstreamError` when the server did not start."""
        self.begin()
        await self._ready.wait()
        if self._failure is not None:
            raise UpstreamError(self._failure)
        return self._session

    @property
    def failed_to_start(self) -> str | None:
        """Why the server did not start (``None`` while starting, once started, or never begun)."""
        return self._failure

    async def close(self) -> UpstreamLog:
        """Stop the server (stdin closed, then SIGTERM, then SIGKILL: MCP's shutdown sequence) and say what
        it wrote on stderr. Safe to call more than once: the stderr file is read into the log once, when the
        server is gone, and closed (left open, it is an unclosed file for the garbage collector to warn about)."""
        self._closing.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await self._task
        await self._stop_started_process()
        if self._closed_log is None:
            self._closed_log = self.log()
            if self._stderr is not None:
                self._stderr.close()
        return self._closed_log

    def log(self) -> UpstreamLog:
        """What the server wrote on stderr so far, bounded (after :meth:`close`, what it wrote in all)."""
        if self._closed_log is not None:
            return self._closed_log
        text, size = "", 0
        if self._stderr is not None:
            self._stderr.flush()
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            text = bounded_text(self._stderr)
        return UpstreamLog(server=self.launch.name, target=self.launch.shown(), start_ms=round(self.start_ms, 1),
                           stderr=text, stderr_bytes=size, problems=list(self.problems),
                           failed_to_start=self._failure, shared_stderr=self.launch.shared_stderr)

    def _stderr_file(self) -> IO[str]:
        """The stderr file, made by :meth:`begin` before the task that starts the server."""
        assert self._stderr is not None, "a connection's server is started by begin()"
        return self._stderr

    async def _own(self) -> None:
        """The task that holds the transport and the session open from start to :meth:`close`."""
        t0 = time.perf_counter()
        try:
            async with contextlib.AsyncExitStack() as stack:
                session = await self._connect(stack)
                self._session = session
                self.start_ms = (time.perf_counter() - t0) * 1000
                self._ready.set()
                await self._closing.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the SDK's task groups raise ExceptionGroups: name what is inside
            if self._failure is None and not self._ready.is_set():
                self._failure = self._start_problem(exc)
        finally:
            if not self._ready.is_set():
                self._failure = self._failure or f"upstream server {self.launch.name!r} stopped before it started"
                self._ready.set()

    async def _connect(self, stack: contextlib.AsyncExitStack) -> Any:
        try:
            from mcp.client.session import ClientSession
        except ImportError:
            raise UpstreamError(f"upstream server {self.launch.name!r}: talking to an MCP server needs the mcp extra: "
                                "pip install 'passhat[mcp]'") from None

        launch = self.launch
        streams: tuple[Any, Any]  # the session's read and write streams, from either transport
        if launch.transport == "stdio":
            from passhat.upstream.stdio import stdio_server

            streams = await stack.enter_async_context(stdio_server(
                launch.command, env=launch.env, cwd=launch.cwd, errlog=self._stderr_file(),
                line_too_long=self._line_too_long))
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            if launch.command:
                await self._start_http_process()
            capped = capped_http.capped_options(self._answer_too_large)
            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers={**capped.pop("headers"), **launch.headers}, verify=False, timeout=launch.timeout, **capped))
            streams = await stack.enter_async_context(streamable_http_client(launch.url, http_client=http))
        session = await stack.enter_async_context(ClientSession(*streams, message_handler=self._on_message))
        try:
            async with asyncio.timeout(launch.start_timeout):
                await session.initialize()
                self.listed = await self._list_all(session)
        except TimeoutError:
            raise UpstreamError(self._with_garbage(
                f"upstream server {launch.name!r} did not answer initialize and tools/list within "
                f"{launch.start_timeout:g}s")) from None
        return session

    async def _list_all(self, session: Any) -> list[Any]:
        """Every page of ``tools/list``."""
        from mcp_types import PaginatedRequestParams

        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(100):  # a paginator that never ends cannot hang the start
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools.extend(page.tools)
            if len(tools) > MAX_TOOLS:
                raise UpstreamError(f"upstream server {self.launch.name!r} lists more than {MAX_TOOLS} tools "
                                    f"({len(tools)} so far); no agent is given that many")
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def _answer_too_large(self) -> Exception:
        self._too_large = (f"upstream server {self.launch.name!r} sent an answer larger than "
                           f"{capped_http.MAX_ANSWER_BYTES // 2**20} MB and the connection was dropped there")
        return UpstreamError(self._too_large)

    def _line_too_long(self, limit: int) -> None:
        self._too_large = (f"upstream server {self.launch.name!r} wrote a line longer than {limit // 2**20} MB on "
                           "stdout (a JSON-RPC message is one line) and was stopped there")

    async def _on_message(self, message: Any) -> None:
        """The session hands over what the transport could not read as a message: keep it (bounded) for the
        errors."""
        if isinstance(message, Exception) and len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(f"not JSON-RPC on stdout: {_unreadable(message)}")

    async def _start_http_process(self) -> None:
        """Start an HTTP server's own process and wait until its port accepts connections."""
        launch = self.launch
        try:
            from passhat.upstream.shared import die_with_parent

            self._process = await asyncio.create_subprocess_exec(
                *launch.command, env=launch.env, cwd=launch.cwd, stdin=asyncio.subprocess.DEVNULL,
                stdout=self._stderr_file(), stderr=self._stderr_file(), start_new_session=True,
                preexec_fn=die_with_parent)
        except OSError as exc:
            raise UpstreamError(f"upstream server {launch.name!r}: cannot start {launch.command[0]!r}: "
                                f"{exc.strerror or exc}") from None
        parts = urlsplit(launch.url)
        host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
        deadline = time.monotonic() + launch.start_timeout
        while True:
            if self._process.returncode is not None:
                raise UpstreamError(f"upstream server {launch.name!r} exited with status "
                                    f"{self._process.returncode} before listening on {host}:{port}")
            try:
                _, writer = await asyncio.open_connection(host, port)
            except OSError:
                if time.monotonic() > deadline:
                    raise UpstreamError(f"upstream server {launch.name!r} did not listen on {host}:{port} "
                                        f"within {launch.start_timeout:g}s") from None
                await asyncio.sleep(0.02)
                continue
            writer.close()
            return

    async def _stop_started_process(self) -> None:
        from passhat.upstream.stdio import stop_group

        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            await stop_group(process)

    # --- calls -----------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Forward one ``tools/call``; the SDK's ``CallToolResult``, or :class:`UpstreamError` naming the server
        and the tool when the server crashed, hung or answered what is not a result."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        session = await self.ready()
        name, timeout = self.launch.name, self.launch.timeout
        try:
            return await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            code = exc.error.code
            if code == CONNECTION_CLOSED and self._too_large:
                raise UpstreamError(f"{self._too_large}; tools/call {tool!r} not answered") from None
            if code == CONNECTION_CLOSED:
                raise UpstreamError(self._with_garbage(
                    f"upstream server {name!r} closed the connection during tools/call {tool!r} (it exited or "
                    "closed its output)")) from None
            if code == REQUEST_TIMEOUT:
                raise UpstreamError(self._with_garbage(
                    f"upstream server {name!r} did not answer tools/call {tool!r} within {timeout:g}s")) from None
            raise UpstreamError(f"upstream server {name!r} answered tools/call {tool!r} with JSON-RPC error "
                                f"{code}: {exc.error.message}") from None
        except (ValidationError, RuntimeError, ValueError) as exc:  # a result that is not a CallToolResult, ...
            raise UpstreamError(f"upstream server {name!r} answered tools/call {tool!r} with a malformed result: "
                                f"{_short(str(exc))}") from None

    # --- words -----------------------------------------------------------------------------------

    def _with_garbage(self, message: str) -> str:
        if not self.problems:
            return message
        return f"{message}; it wrote {len(self.problems)} line(s) that are not JSON-RPC on stdout, the first: " \
               f"{self.problems[0].removeprefix('not JSON-RPC on stdout: ')}"

    def _start_problem(self, exc: BaseException) -> str:
        """Why the start failed, in words, with the end of the server's stderr (start-up errors are there)."""
        inner = _innermost(exc)
        name, shown = self.launch.name, self.launch.shown()
        if self._too_large:
            text = f"{self._too_large}; initialize and tools/list not answered"
        elif isinstance(inner, UpstreamError):
            text = str(inner)
        elif isinstance(inner, FileNotFoundError | PermissionError):
            text = f"upstream server {name!r}: cannot start {self.launch.command[0]!r}: {inner.strerror or inner}"
        else:
            from mcp.shared.exceptions import MCPError
            from mcp_types import CONNECTION_CLOSED

            if isinstance(inner, MCPError) and inner.error.code == CONNECTION_CLOSED:
                text = self._with_garbage(f"upstream server {name!r} ({shown}) exited, or closed its stdout, before "
                                          "answering initialize and tools/list")
            elif isinstance(inner, MCPError):
                text = self._with_garbage(f"upstream server {name!r} ({shown}) failed during initialize or tools/list: "
                                          f"{inner.error.message}")
            else:
                text = f"upstream server {name!r} ({shown}) failed to start: {type(inner).__name__}: {_short(str(inner))}"
        tail = self.log().stderr.strip()
        return f"{text}\n--- its stderr ---\n{tail[-2000:]}" if tail else text


def _unreadable(exc: Exception) -> str:
    """A line the SDK could not parse, quoted, and why (its pydantic error carries the whole line)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
        except (IndexError, TypeError):
            first = None
        if first is not None and isinstance(first.get("input"), str):
            return f"{_short(first['input'], 200)!r} ({_short(first['msg'], 100)})"
    return _short(str(exc))


def _innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
