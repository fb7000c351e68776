"""passhat's small plain-HTTP client (passhat/localhttp.py), which RemoteEpisode and the agent-service POST use:
every way an HTTP/1.1 answer can be framed, kept-alive connections and the ways they end, and its bounds."""

from __future__ import annotations

import asyncio
import socket
import socketserver
from collections.abc import Iterator
from typing import Any

import pytest

from passhat import localhttp
from passhat.localhttp import LocalClient
from tests.raw_http import RawServer, read_request, started


class Scripted(RawServer):
    """Answers each request on a connection with the next of ``answers`` (raw bytes), then closes it if the
    answer says so; ``connections`` counts the connections it accepted."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.connections = 0
        self.requests: list[dict[str, str]] = []
        super().__init__(_Handler)


ANSWERS: dict[str, list[bytes]] = {
    "length": [b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"] * 3,
    "chunked": [b"HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\nx-a: 1\r\n\r\n"
                b"3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\ntrailer: t\r\n\r\n"],
    "negative-chunk": [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n"],
    "endless-trailer": [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n" + b"x-t: 1\r\n" * 20_000],
    "to-the-end": [b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the connection ends"],
    "one-then-close": [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"],
    "reads-the-second-then-dies": [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", b"<die>"],
    "too-large": [b"HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\n" + b"x" * 10],
    "endless": [b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 200_000],
    "silent": [b""],
    "not-http": [b"SSH-2.0-OpenSSH_9.6\r\n\r\n"],
}


class _Handler(socketserver.StreamRequestHandler):
    server: Scripted

    def handle(self) -> None:
        self.server.connections += 1
        for answer in ANSWERS[self.server.mode]:
            headers, _ = read_request(self.rfile)
            if not headers[""]:
                return  # the client closed its connection
            self.server.requests.append(headers)
            if not answer:
                self.server.done.wait(5)  # never answers
                return
            if answer == b"<die>":
                return  # read the request, then closed without answering (a worker that crashed)
            self.wfile.write(answer)
            self.wfile.flush()
            if self.server.mode in ("to-the-end", "one-then-close", "endless"):
                return  # closes the connection: the end of the answer, or of a kept-alive connection


@pytest.fixture
def scripted() -> Iterator[Any]:
    with started(Scripted) as start:
        yield start


def fetch(url: str, *requests: dict[str, Any], client: LocalClient | None = None) -> list[Any]:
    """Make the requests in order on one client; each answer, or the exception it raised."""

    async def main() -> list[Any]:
        http = client or LocalClient()
        out: list[Any] = []
        for request in requests:
            try:
                out.append(await http.request(request.pop("method", "POST"), url, **request))
            except localhttp.HttpError as exc:
                out.append(exc)
        await http.aclose()
        return out

    return asyncio.run(main())


def test_answers_framed_by_length_chunks_or_the_end_of_the_connection(scripted: Any) -> None:
    length, chunked, to_the_end = scripted("length"), scripted("chunked"), scripted("to-the-end")
    got = fetch(f"http://127.0.0.1:{length.port}/a", {"json_body": {"x": 1}, "headers": {"authorization": "Bearer t"}},
                {"method": "GET"}, {"body": b"raw"})
    assert [(a.status, a.body) for a in got] == [(200, b"hello")] * 3
    assert length.connections == 1  # kept alive: one connection for the three
    first = length.requests[0]
    assert first[""] == "POST /a HTTP/1.1" and first["authorization"] == "Bearer t"
    assert first["content-type"] == "application/json" and first["content-length"] == "8"
    (answer,) = fetch(f"http://127.0.0.1:{chunked.port}/", {})
    assert (answer.status, answer.body, answer.headers["x-a"]) == (201, b"hello", "1")
    (answer,) = fetch(f"http://127.0.0.1:{to_the_end.port}/", {})
    assert answer.body == b"until the connection ends"


def test_a_kept_alive_connection_the_server_closed_meanwhile_is_replaced(scripted: Any) -> None:
    server = scripted("one-then-close")
    got = fetch(f"http://127.0.0.1:{server.port}/", {"method": "GET"}, {"method": "GET"}, {"resend_if_stale": True})
    assert [a.body for a in got] == [b"ok"] * 3 and server.connections == 3


def test_a_post_is_not_sent_twice_unless_the_caller_says_the_server_allows_it(scripted: Any) -> None:
    """A pooled connection that closes before any answer may have delivered the request (a worker that read it,
    then died): a POST is then an error rather than a second start of the same work, unless the caller knows the
    server closes silently only before reading (passhat's tool server)."""
    dying = scripted("reads-the-second-then-dies")
    first, second = fetch(f"http://127.0.0.1:{dying.port}/", {}, {})
    assert first.body == b"ok" and dying.connections == 1 and len(dying.requests) == 2  # it did read the second
    assert isinstance(second, localhttp.BrokenAnswer) and "closed the connection without answering" in str(second)
    again = scripted("reads-the-second-then-dies")
    first, second = fetch(f"http://127.0.0.1:{again.port}/", {"method": "GET"}, {"method": "GET"})
    assert (first.body, second.body) == (b"ok", b"ok") and again.connections == 2  # a GET is sent again


def test_bounds_and_failures_are_errors_naming_what_happened(scripted: Any) -> None:
    too_large, endless, silent, not_http = scripted("too-large"), scripted("endless"), scripted("silent"), scripted("not-http")
    (declared,) = fetch(f"http://127.0.0.1:{too_large.port}/", {"max_bytes": 1000})
    assert isinstance(declared, localhttp.AnswerTooLarge) and "declared 1,000,000 bytes" in str(declared)
    (sent,) = fetch(f"http://127.0.0.1:{endless.port}/", {"max_bytes": 1000})
    assert isinstance(sent, localhttp.AnswerTooLarge) and "more than 1,000 bytes" in str(sent)
    (late,) = fetch(f"http://127.0.0.1:{silent.port}/", {"timeout": 0.2})
    assert isinstance(late, localhttp.AnswerTimeout) and "no whole answer within 0.2 s" in str(late)
    (garbage,) = fetch(f"http://127.0.0.1:{not_http.port}/", {})
    assert isinstance(garbage, localhttp.BrokenAnswer) and "not an HTTP/1.x answer" in str(garbage)
    (negative,) = fetch(f"http://127.0.0.1:{scripted('negative-chunk').port}/", {})
    assert isinstance(negative, localhttp.BrokenAnswer) and "bad chunk size b'-5'" in str(negative)
    (trailer,) = fetch(f"http://127.0.0.1:{scripted('endless-trailer').port}/", {})
    assert isinstance(trailer, localhttp.BrokenAnswer) and "trailer longer than" in str(trailer)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # nothing listens there once this socket is closed
    (refused,) = fetch(f"http://127.0.0.1:{port}/", {})
    assert isinstance(refused, localhttp.ConnectFailed) and f"127.0.0.1:{port}" in str(refused)


def test_only_plain_http_that_no_proxy_setting_redirects_is_suitable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert localhttp.suitable("http://127.0.0.1:8000/trials/x/tools")
    assert not localhttp.suitable("https://127.0.0.1:8000/trials/x/tools")
    monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
    assert not localhttp.suitable("http://agents.example/agent")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    assert localhttp.suitable("http://127.0.0.1:8000/trials/x/tools")
    with pytest.raises(ValueError, match="plain http:// only"):
        asyncio.run(LocalClient().request("GET", "https://example.org/"))


def test_the_loops_shared_client_closes_its_connections_when_asyncio_run_ends(scripted: Any) -> None:
    server = scripted("length")
    kept: list[Any] = []

    async def main() -> None:
        client = await localhttp.shared_client()
        assert client is await localhttp.shared_client()  # one per loop
        await client.request("GET", f"http://127.0.0.1:{server.port}/")
        kept.extend(c for idle in client._idle.values() for c in idle)

    asyncio.run(main())
    assert len(kept) == 1 and kept[0].transport.is_closing()  # closed with the loop, not left to the GC
