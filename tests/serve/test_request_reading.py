"""How the tool server reads a request into what the application sees: the scope's path and query, the bearer
token, a tool call's arguments. The shortcuts taken for the usual request (serve/http11.py, serve/app.py) must
read every request as the general path does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from passhat.serve.app import _arguments, bearer
from tests.raw_http import exchange


def scope_of(request: bytes) -> dict[str, Any]:
    """The ASGI scope an application is given for the raw ``request``."""
    seen: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(dict(scope))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    assert exchange(app, request).startswith(b"HTTP/1.1 204 ")
    return seen[0]


@pytest.mark.parametrize(("target", "path", "raw_path", "query"), [
    (b"/trials/a/tools", "/trials/a/tools", b"/trials/a/tools", b""),
    (b"/trials/a/tools?x=1&y=2", "/trials/a/tools", b"/trials/a/tools", b"x=1&y=2"),
    (b"/trials/a%20b/tools", "/trials/a b/tools", b"/trials/a%20b/tools", b""),
    (b"/trials/a/tools#part", "/trials/a/tools", b"/trials/a/tools", b""),
    (b"http://127.0.0.1/trials/a/tools?q", "/trials/a/tools", b"/trials/a/tools", b"q"),
])
def test_the_path_and_query_the_application_sees(target: bytes, path: str, raw_path: bytes, query: bytes) -> None:
    scope = scope_of(b"GET " + target + b" HTTP/1.1\r\nHost: a\r\nX-Case: Mixed  \r\n\r\n")
    assert (scope["path"], scope["raw_path"], scope["query_string"]) == (path, raw_path, query)
    assert scope["method"] == "GET" and scope["http_version"] == "1.1" and scope["type"] == "http"
    assert scope["headers"] == [(b"host", b"a"), (b"x-case", b"Mixed")]  # names lower-cased, trailing space cut


def test_a_method_outside_the_common_ones_is_given_as_sent() -> None:
    assert scope_of(b"PROPFIND /x HTTP/1.1\r\nHost: a\r\n\r\n")["method"] == "PROPFIND"


def test_each_request_gets_a_scope_of_its_own() -> None:
    first, second = scope_of(b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n"), scope_of(b"GET /y HTTP/1.1\r\nHost: a\r\n\r\n")
    first["path"] = "/changed"
    assert second["path"] == "/y" and first["client"][0] == "127.0.0.1"


@pytest.mark.parametrize(("headers", "token"), [
    ([(b"authorization", b"Bearer abc")], "abc"),
    ([(b"authorization", b"bearer  abc ")], "abc"),
    ([(b"authorization", b"Basic abc")], None),
    ([(b"host", b"a")], None),
    ([(b"authorization", b"Bearer first"), (b"authorization", b"Bearer second")], "first"),
])
def test_the_bearer_token_is_the_first_authorization_fields(headers: list[tuple[bytes, bytes]], token: str | None) -> None:
    assert bearer({"headers": headers}) == token


BODIES = [
    b'{"order_id": 4812}', b'{"a": "\\ud800"}', b'{"a": [1, 2.5, null, true]}', b"  {}  ", b"", b"   ",
    b'{"a": "\xc3\xa9"}', b'{"a": "\xed\xa0\x80"}', b'{"a": "\xff"}', b'{"a": 1', b'{"a": 1} x',
    b"\xef\xbb\xbf{}", '{"a": "é"}'.encode("utf-16-le"), '{"a": "é"}'.encode("utf-16"), '{"a": 1}'.encode("utf-32"),
    b"[1]", b"7", b"{", b"{\x00",
]


@pytest.mark.parametrize("raw", BODIES)
def test_tool_arguments_are_read_as_json_loads_reads_them(raw: bytes) -> None:
    def read(decode: Any) -> tuple[str, Any]:
        try:
            return "ok", decode(raw)
        except Exception as exc:  # the kind of failure must match too (ValueError: recorded as sent)
            return type(exc).__name__, None

    assert read(_arguments) == read(lambda b: json.loads(b) if b.strip() else {})
