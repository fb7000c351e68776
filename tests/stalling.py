"""A model provider that stalls on purpose (and one that answers well), on 127.0.0.1, for the outage tests.

Each request is read whole; then the server behaves as its mode says. With ``mode="by_model"`` the request's
``model`` names the mode, so one server serves a whole test module (the relay tests start one per module).

- ``no_headers``: says nothing at all; ``keepalives_only``: 200 and SSE comments, never data;
  ``one_chunk_then_silence``: 200, one chunk, silence; ``pings_only``: 200 and Anthropic's ``event: ping``;
- ``healthy``: an OpenAI chat stream (:data:`HEALTHY_TEXT` in two chunks, keep-alives between, usage last);
  ``healthy_anthropic``: the same answer as an Anthropic Messages stream;
- ``gated``: a healthy stream that sends its second half only once the test has opened :attr:`gate`
  (having seen the first half, so the relay did not buffer);
- ``slow_unstreamed``: a non-streamed answer whose headers come after ``slow_s`` seconds;
- ``unavailable_once``: 503 (retry after 1 ms) to the first request of the server's life, then healthy.

A stalled handler ends when the test ends or its client closes the connection, whichever comes first, so
stalls given up on cost no thread and no CPU afterwards.
"""

from __future__ import annotations

import json
import select
import socketserver
import threading

from tests.raw_http import RawServer, read_request

STALL_MODES = ("no_headers", "keepalives_only", "one_chunk_then_silence")
HEALTHY_TEXT = ["Noted: ", "call mom."]
USAGE = {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}
FIRST_CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "stalling-model",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": "I"}, "finish_reason": None}]}
SSE_HEADERS = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n"


def _chunk(model: str, delta: dict[str, str], finish: str | None = None) -> bytes:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n".encode()


def healthy_stream(model: str) -> list[bytes]:
    """The SSE stream of a healthy answer, in the pieces the server writes (each flushed on its own)."""
    usage = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [], "usage": USAGE}
    return [_chunk(model, {"role": "assistant", "content": HEALTHY_TEXT[0]}), b": keep-alive\n\n",
            _chunk(model, {"content": HEALTHY_TEXT[1]}), _chunk(model, {}, "stop"),
            f"data: {json.dumps(usage)}\n\n".encode(), b"data: [DONE]\n\n"]


def anthropic_stream(model: str) -> list[bytes]:
    def event(kind: str, data: dict[str, object]) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

    message = {"id": "m1", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None,
               "stop_sequence": None, "usage": {"input_tokens": USAGE["prompt_tokens"], "output_tokens": 1}}
    return [event("message_start", {"message": message}), event("ping", {}),
            event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            *(event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": t}}) for t in HEALTHY_TEXT),
            event("content_block_stop", {"index": 0}),
            event("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                    "usage": {"output_tokens": USAGE["completion_tokens"]}}),
            event("message_stop", {})]


class StallingProvider(RawServer):
    """See the module docstring; ``requests`` counts requests per mode as they are accepted."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.requests: dict[str, int] = {}
        self.headers: list[dict[str, str]] = []
        self.gate = threading.Event()
        self.gate_seen: bool | None = None
        """For ``gated``: whether the client opened the gate before the server gave up waiting."""
        self.slow_s = 0.0
        super().__init__(_Handler)

    @property
    def total(self) -> int:
        return sum(self.requests.values())


class _Handler(socketserver.StreamRequestHandler):
    server: StallingProvider

    def handle(self) -> None:
        headers, body = read_request(self.rfile)
        mode = self.server.mode
        if mode == "by_model":
            mode = str(json.loads(body or b"{}").get("model", ""))
        self.server.requests[mode] = self.server.requests.get(mode, 0) + 1  # a client that gave up first still asked
        self.server.headers.append(headers)
        try:
            self._answer(mode)
        except OSError:  # the client gave up on the stall and closed: what it should do
            return

    def _write(self, *parts: bytes) -> None:
        for part in parts:
            self.wfile.write(part)
            self.wfile.flush()

    def _answer(self, mode: str) -> None:
        if mode in ("healthy", "gated"):
            stream = healthy_stream(mode)
            self._write(SSE_HEADERS, stream[0])
            if mode == "gated":
                self.server.gate_seen = self.server.gate.wait(10)
            self._write(*stream[1:])
        elif mode == "unavailable_once" and self.server.requests[mode] == 1:
            text = b'{"error": {"message": "overloaded", "type": "server_error"}}'
            self._write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after-ms: 1\r\n"
                        b"content-length: %d\r\n\r\n" % len(text), text)
        elif mode == "unavailable_once":
            self._write(SSE_HEADERS, *healthy_stream(mode))
        elif mode == "healthy_anthropic":
            self._write(SSE_HEADERS, *anthropic_stream(mode))
        elif mode == "slow_unstreamed":
            if not self.server.done.wait(self.server.slow_s):
                text = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": mode, "usage": USAGE,
                                   "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                       "role": "assistant", "content": "".join(HEALTHY_TEXT)}}]}).encode()
                self._write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                            b"content-length: %d\r\n\r\n" % len(text), text)
        else:
            self._stall(mode)

    def _stall(self, mode: str) -> None:
        if mode != "no_headers":
            self._write(SSE_HEADERS)
        if mode == "one_chunk_then_silence":
            self._write(f"data: {json.dumps(FIRST_CHUNK)}\n\n".encode())
        keepalive = {"keepalives_only": b": keep-alive\n\n", "pings_only": b'event: ping\ndata: {"type": "ping"}\n\n'}
        while not self.server.done.is_set():
            if mode in keepalive:  # alive at the TCP level, and saying nothing
                self._write(keepalive[mode])
            readable, _, _ = select.select([self.connection], [], [], 0.02)
            if readable and not self.connection.recv(1):
                return  # the client closed the connection


__all__ = ["HEALTHY_TEXT", "STALL_MODES", "USAGE", "StallingProvider", "anthropic_stream", "healthy_stream"]
