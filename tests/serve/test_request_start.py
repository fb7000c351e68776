"""When a request's application runs: a request read whole starts in the read's own callback (no loop turn
between its last byte and its answer), as a real task; anything read after a close is never run."""

from __future__ import annotations

import asyncio
from typing import Any

from passhat.serve.http11 import HttpService
from tests.raw_http import exchange


class Transport(asyncio.Transport):
    """What the connection writes, kept; a socket-less stand-in for the loop's transport."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[bytes] = []
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name in ("sockname", "peername") else default

    def write(self, data: Any) -> None:
        self.out.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def answer(scope: Any, receive: Any, send: Any) -> None:
    """Answers with the request's path, from inside ``asyncio.timeout`` (which needs a current task)."""
    async with asyncio.timeout(5):
        body = (await receive())["body"]
    raw = scope["path"].encode() + b" " + body + b" " + str(asyncio.current_task() is not None).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(raw))]})
    await send({"type": "http.response.body", "body": raw})


def test_a_request_read_whole_is_answered_within_the_read_callback_by_a_task() -> None:
    async def main() -> list[bytes]:
        loop = asyncio.get_running_loop()
        conn = HttpService(answer).protocol()
        transport = Transport()
        conn.connection_made(transport)
        written: list[bytes] = []

        def read() -> None:  # as the loop calls a protocol: from a callback, not from a task
            conn.data_received(b"POST /call HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\n\r\n{}")
            written.extend(transport.out)  # what was written before the callback returned

        loop.call_soon(read)
        await asyncio.sleep(0.05)
        return written

    written = asyncio.run(main())
    assert len(written) == 1 and written[0].startswith(b"HTTP/1.1 200 ") and written[0].endswith(b"/call {} True")


def test_a_request_pipelined_behind_one_answered_with_a_close_is_never_run() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:  # the first answer closes the connection
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"2"), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": b"ok"})

    got = exchange(app, b"GET /first HTTP/1.1\r\nhost: a\r\n\r\n"
                        b"POST /second HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\n\r\n{}", until_closed=True)
    assert seen == ["/first"] and got.count(b"HTTP/1.1 ") == 1 and b"connection: close" in got
