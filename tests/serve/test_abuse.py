"""The tool server under abuse from anyone who can reach 127.0.0.1: bounded heads, refused before routing."""

from __future__ import annotations

import asyncio
import socket

from passhat.serve import ToolServer
from passhat.serve.http11 import MAX_HEAD_BYTES, MAX_HEADERS


def answer_to(request: bytes) -> bytes:
    """What the server answers to the raw ``request`` (sent whole, however large), from a thread."""

    async def main() -> bytes:
        async with ToolServer(mcp=False) as server:
            def probe() -> bytes:
                with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:  # a bound, not a speed check
                    try:
                        conn.sendall(request)
                    except OSError:  # refused and closed while still sending: the answer was written first
                        pass
                    return conn.recv(4096)

            return await asyncio.get_running_loop().run_in_executor(None, probe)

    return asyncio.run(main())


def test_a_32_mib_header_is_refused_with_431_and_the_connection_closed() -> None:
    got = answer_to(b"GET /trials/x HTTP/1.1\r\nx-probe: " + b"a" * (32 << 20))
    assert got.startswith(b"HTTP/1.1 431 ") and b"connection: close" in got
    assert f"request head larger than {MAX_HEAD_BYTES} bytes".encode() in got


def test_too_many_header_fields_are_refused_with_431() -> None:
    fields = b"".join(b"x-%d: 1\r\n" % i for i in range(MAX_HEADERS + 1))
    got = answer_to(b"GET /trials/x HTTP/1.1\r\nhost: a\r\n" + fields + b"\r\n")
    assert got.startswith(b"HTTP/1.1 431 ") and f"more than {MAX_HEADERS} header fields".encode() in got


def test_a_head_within_the_limits_is_routed() -> None:
    got = answer_to(b"GET /nowhere HTTP/1.1\r\nhost: a\r\nx-pad: " + b"a" * (MAX_HEAD_BYTES // 2) + b"\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 404 ")
