"""passhat's own stdio transport to an upstream MCP server: the ``mcp`` SDK's ``stdio_client`` with the
server's stdout read as bounded lines.

The SDK's reader joins its whole pending buffer to every chunk it reads and has no bound on a line: a
server writing a line that never ends kept a CPU busy and grew memory (140 MB in 10 s) until the call's
time-out, and a correct 50 MB result took over 20 s to read (quadratic). Here a line is gathered as a list
of chunks and joined once, and a line longer than :data:`passhat.capped_http.MAX_ANSWER_BYTES` (the cap
on an answer over HTTP) is the server's protocol failure: the caller is told (``line_too_long``), the
session sees the connection end, and the server is stopped at once.

The rest is the SDK's transport, so :class:`mcp.client.session.ClientSession` cannot tell them apart: the
server starts in a session (process group) of its own with its stderr in the caller's file, each line is
handed over as a ``JSONRPCMessage`` or as the error that says why it is not one, each message sent is one
line on stdin, and closing follows MCP's shutdown sequence (stdin closed, a grace period, SIGTERM to the
process group, SIGKILL), every wait bounded and shielded so a cancelled trial leaks no server.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

import anyio
import anyio.lowlevel
import mcp_types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from passhat import capped_http

GRACE_SECONDS = 2.0
"""How long a server may take to exit by itself once its stdin is closed (the SDK's figure)."""
KILL_SECONDS = 2.0
"""How long its process group may take to exit after SIGTERM, before SIGKILL (the SDK's figure)."""
REAP_SECONDS = 2.0
"""How long to wait for a killed server to be seen dead; only a process that survives SIGKILL runs it out."""
FLUSH_SECONDS = 0.5
"""How long messages already accepted may take to reach stdin when the connection closes."""
CHUNK_BYTES = 65536
POLL_SECONDS = 0.01

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]


class LineTooLong(Exception):
    """A line went past the reader's limit before its newline came."""


class LineReader:
    """Splits a byte stream into lines in linear time, holding at most ``limit`` bytes of a line.

    A line's pieces are kept in a list and joined once, at its newline; the partial line left at the end
    of the stream is dropped, as the SDK does (a message is a whole line)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that ``chunk`` completes (without their newline); :class:`LineTooLong` past the limit."""
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._keep(chunk[start:end])
            lines.append(b"".join(self._parts))
            self._parts, self._size = [], 0
            start = end + 1
        self._keep(chunk[start:])
        return lines

    def _keep(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._size > self.limit:
            self._parts, self._size = [], 0
            raise LineTooLong
        if piece:
            self._parts.append(piece)


def parse_line(line: bytes) -> SessionMessage | Exception:
    """One line of stdout as a message, or the error saying why it is not one (the session hands it to the
    message handler). The bytes are parsed as they are, with no decoded copy of a large line; a line that
    fails is parsed again decoded (undecodable bytes replaced, as the SDK's reader does), so the error
    carries the line as text and a message with invalid UTF-8 in a string still reads."""
    adapter = mcp_types.jsonrpc_message_adapter
    try:
        return SessionMessage(adapter.validate_json(line, by_name=False))
    except ValueError:
        pass
    try:
        return SessionMessage(adapter.validate_json(line.decode("utf-8", errors="replace"), by_name=False))
    except ValueError as exc:
        return exc


@contextlib.asynccontextmanager
async def stdio_server(command: list[str], *, env: dict[str, str], cwd: str | None, errlog: IO[str],
                       line_too_long: Callable[[int], None]) -> AsyncIterator[tuple[ReadStream, WriteStream]]:
    """Start ``command`` and yield the session's streams to it; stop it on the way out.

    ``line_too_long(limit)`` is called when the server writes a line longer than ``limit`` bytes, before
    the session sees the connection end, so the caller can say why it ended. ``OSError`` when the command
    cannot be started."""
    limit = capped_http.MAX_ANSWER_BYTES  # read now, so a test can lower it
    process = await anyio.open_process(command, env=env, cwd=cwd, stderr=errlog, start_new_session=True)
    # No await until the task group is entered, or a cancellation in the gap would leak the process.
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def read_stdout() -> None:
        assert process.stdout is not None
        lines = LineReader(limit)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            async with to_session:
                try:
                    while True:  # one chunk at a time: no read-ahead while the session is busy
                        try:
                            chunk = await process.stdout.receive(CHUNK_BYTES)
                        except anyio.EndOfStream:
                            return
                        try:
                            complete = lines.feed(chunk)
                        except LineTooLong:
                            line_too_long(limit)
                            await to_session.aclose()  # pending requests fail now, not at their time-out
                            with anyio.CancelScope(shield=True):
                                await stop_group(process)
                            return
                        for line in complete:
                            await to_session.send(parse_line(line))
                finally:
                    await _drain(process)

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8", errors="replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await to_session.aclose()  # the server stopped reading: the session sees the end, not a hang
        finally:
            writer_done.set()

    async def shut_down() -> None:
        from_server.close()  # unblocks the reader into its drain: a server stuck writing cannot read stdin
        to_server.close()
        with anyio.move_on_after(FLUSH_SECONDS):
            await writer_done.wait()
        await _stop(process)
        for stream in (from_server, to_server, to_session, from_session):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_stdout)
        tasks.start_soon(write_stdin)
        try:
            yield from_server, to_server
        finally:
            with anyio.CancelScope(shield=True):
                await shut_down()
            tasks.cancel_scope.cancel()  # a survivor of the kill may still hold a pipe open


async def _drain(process: Process) -> None:
    """Read and drop what the server still writes, so a server flushing its output can exit; ends when the
    pipe closes (its end, or ours at shutdown)."""
    assert process.stdout is not None
    with anyio.CancelScope(shield=True), contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:
            await process.stdout.receive(CHUNK_BYTES)


async def _stop(process: Process) -> None:
    """MCP's shutdown: close stdin, give the server :data:`GRACE_SECONDS`, then stop its process group."""
    assert process.stdin is not None and process.stdout is not None
    await _close(process.stdin)
    if not await _exited(process, GRACE_SECONDS):
        await stop_group(process)
    await _close(process.stdout)
    # The asyncio transport stays open (and warns when collected) while a survivor holds a pipe end.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError):
            close()


async def stop_group(process: Any) -> None:
    """SIGTERM to the server's process group, SIGKILL after :data:`KILL_SECONDS` if any of it is left. For any
    process started in a session of its own (anyio's or asyncio's: its ``pid`` and ``returncode`` are read)."""
    for sig, wait in ((signal.SIGTERM, KILL_SECONDS), (signal.SIGKILL, REAP_SECONDS)):
        try:
            os.killpg(process.pid, sig)  # its own session: the group is the server's pid
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        with anyio.move_on_after(wait):
            while _group_alive(process):
                await anyio.sleep(POLL_SECONDS)
            return


def _group_alive(process: Any) -> bool:
    _ = process.returncode  # reaps the leader, whose zombie would keep the group alive
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


async def _exited(process: Process, timeout: float) -> bool:
    """Whether the server exited within ``timeout`` (its return code, not ``wait()``, which on asyncio also
    waits for the pipes to close: a child that inherited them would make an exited server look hung)."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(POLL_SECONDS)
        return True
    return False


async def _close(stream: Any) -> None:
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.aclose()
