"""The harness side of a forwarded address: a unix socket whose connections go on to one host and port.

Inside an agent's network namespace, PID 1 listens on an allowed host's address and passes every
connection to such a socket (:mod:`passhat.sandbox._init`); here it is connected to the host itself,
outside the namespace, at the address resolved when the run started. Bytes only: TLS goes end to end.
"""

from __future__ import annotations

import asyncio
import contextlib


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass


async def relay(path: str, host: str, port: int) -> asyncio.AbstractServer:
    """Listen on the unix socket ``path`` and relay each connection to ``host:port``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()

    return await asyncio.start_unix_server(handle, path=path)


__all__ = ["relay"]
