"""A provider that answers what no provider should, through the OpenAI and Anthropic SDKs on a real server on
127.0.0.1: an SSE line that never ends (it reached 12 GB in 20 s before the cap), an event nested 100,000
levels deep, tool-call arguments nested as deep. Each is a one-line error or an invalid tool call, never
a RecursionError or unbounded memory."""

from __future__ import annotations

import asyncio
import json
import socketserver
from collections.abc import Iterator
from typing import Any

import pytest

from passhat import capped_http
from passhat.errors import InfrastructureError
from passhat.llm import RetryPolicy
from passhat.llm.anthropic_chat import AnthropicChat
from passhat.llm.chat import CallOptions, ChatMessage, ModelReply
from passhat.llm.openai_chat import OpenAIChat
from tests.raw_http import RawServer, read_request, started

pytest.importorskip("openai")
pytest.importorskip("anthropic")

SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n"
DEEP = "[" * 100_000 + "]" * 100_000
CAP = 1 << 20
"""The answer cap in these tests (64 MB in a run)."""
SENT_BOUND = 1 << 30
"""The endless line stops here for the test's own sake (1 GB): passhat must drop the connection far sooner."""
TWICE = RetryPolicy(attempts=2, base_delay_s=0.001, max_delay_s=0.001, jitter=0.0)


class HostileProvider(RawServer):
    """Answers every request as ``mode`` says; ``sent`` counts the bytes of the endless line, ``headers`` the
    requests' headers."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sent = 0
        self.headers: list[dict[str, str]] = []
        super().__init__(_Hostile)


def _openai_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n".encode()


class _Hostile(socketserver.StreamRequestHandler):
    server: HostileProvider

    def handle(self) -> None:
        headers, _ = read_request(self.rfile)
        self.server.headers.append(headers)
        if self.server.mode == "huge_error":
            body = json.dumps({"error": {"type": "overloaded_error", "message": "x" * 200_000}}).encode()
            self.wfile.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(body), body))
            return
        self.wfile.write(SSE_HEAD)
        try:
            if self.server.mode == "endless":
                self.wfile.write(b"data: ")
                block = b"x" * 65536
                while self.server.sent < SENT_BOUND:
                    self.wfile.write(block)
                    self.server.sent += len(block)
            elif self.server.mode == "deep_event":
                self.wfile.write(f"event: message_start\ndata: {DEEP}\n\n".encode())
            elif self.server.mode == "deep_arguments":
                call = {"index": 0, "id": "t1", "type": "function", "function": {"name": "add_note", "arguments": DEEP}}
                self.wfile.write(_openai_chunk({"role": "assistant", "tool_calls": [call]}))
                self.wfile.write(_openai_chunk({}, "tool_calls") + b"data: [DONE]\n\n")
            self.wfile.flush()
        except OSError:  # passhat dropped the connection: what it should do
            return


@pytest.fixture
def provider() -> Iterator[Any]:
    with started(HostileProvider) as start:
        yield start


def model(kind: str, server: HostileProvider) -> Any:
    url = f"http://127.0.0.1:{server.port}/v1"
    return (OpenAIChat if kind == "openai" else AnthropicChat)("m", base_url=url, retry=TWICE)


def ask(chat: Any) -> ModelReply:
    return asyncio.run(chat.complete("s", [ChatMessage(role="user", text="hi")], [], CallOptions()))


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_an_sse_line_that_never_ends_is_an_outage_at_the_cap(provider: Any, kind: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capped_http, "MAX_ANSWER_BYTES", CAP)
    server = provider("endless")
    with pytest.raises(InfrastructureError, match=rf"^{kind}:m: the provider's answer is larger than 1 MB; not read"):
        ask(model(kind, server))
    assert server.sent < 64 * CAP  # dropped soon after the cap, not buffered on
    assert len(server.headers) == 1  # not retried: a provider that sends this much once is broken
    assert server.headers[0]["accept-encoding"] == "identity"  # so the cap counts what is decoded


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_an_event_nested_100_000_deep_is_an_unreadable_answer_retried_then_an_outage(provider: Any, kind: str) -> None:
    server = provider("deep_event")
    with pytest.raises(InfrastructureError, match="still failing after 2 attempts: IncompleteAnswer: .*nested too "
                                                  "deeply to parse"):
        ask(model(kind, server))
    assert len(server.headers) == 2


def test_tool_arguments_nested_100_000_deep_are_passed_on_as_text(provider: Any) -> None:
    reply = ask(model("openai", provider("deep_arguments")))
    [call] = reply.tool_calls
    assert call.name == "add_note" and call.arguments == DEEP  # the boundary records them as invalid arguments


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_huge_error_body_is_kept_short_in_the_error(provider: Any, kind: str) -> None:
    with pytest.raises(InfrastructureError, match="still failing after 2 attempts: InternalServerError") as caught:
        ask(model(kind, provider("huge_error")))
    assert len(str(caught.value)) < 1200  # the SDK's message holds all 200 KB of the body; the record need not
