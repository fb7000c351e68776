"""A local fake model server for tests without the internet.

It speaks the OpenAI chat-completions (``POST /v1/chat/completions``) and Anthropic messages
(``POST /v1/messages``) wire formats, streamed (SSE) or not, with tool calls, token usage, and error
answers (429 with ``Retry-After``, 500, ...). What it answers is decided by a *script*: a function of the
request that returns the next :class:`Turn`. Point the real SDKs at it::

    with FakeModelServer(scripted([Turn(tool_calls=[ToolUse("list_notes", {})]), Turn(text="Done ###DONE###")])) as srv:
        passhat run SUITE --agent openai:scripted-model --base-url {srv.openai_url}

The conversation position is the number of assistant messages in the request, so one script serves
many concurrent conversations, and a retried request (same body) gets the same turn.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Api = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class ToolUse:
    """A tool call the fake model makes."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    """A JSON object, or raw text (to test malformed arguments)."""


@dataclass(frozen=True)
class Turn:
    """One model answer: text and/or tool calls, optionally preceded by error answers."""

    text: str = ""
    tool_calls: Sequence[ToolUse] = ()
    errors: Sequence[int] = ()
    """HTTP statuses answered, one per attempt of the same request, before the real answer."""
    always: int | None = None
    """Answer every attempt with this HTTP status (a provider that keeps failing)."""
    retry_after: float = 0.0
    """The ``Retry-After`` (seconds) sent with a 429."""
    delay_s: float = 0.0
    """Wait before the first byte (to observe time to first token)."""
    input_tokens: int | None = None
    """Reported prompt tokens (default: request size / 4)."""
    output_tokens: int | None = None
    """Reported completion tokens (default: answer size / 4, at least 1)."""
    stall_s: float = 0.0
    """Streamed answers only: after the first event, go silent this long (a stream that stalls mid-answer)."""
    garbage: bool = False
    """Streamed answers only: send a data line that is not JSON after the first event (a broken proxy)."""


@dataclass
class FakeRequest:
    """A request the server received, as the script sees it."""

    api: Api
    path: str
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` when the server received it (to count requests per window)."""

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def seed(self) -> int | None:
        return self.body.get("seed")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def turn(self) -> int:
        """How many assistant messages the conversation already has (0 for the first call)."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def system(self) -> str:
        if self.api == "anthropic":
            sys = self.body.get("system", "")
            return sys if isinstance(sys, str) else "".join(b.get("text", "") for b in sys)
        return "".join(_text(m.get("content")) for m in self.messages if m.get("role") == "system")

    @property
    def prompt(self) -> str:
        """All the text of the request (system, messages, tool results) — what a model would read."""
        return self.system + "\n" + "\n".join(_text(m.get("content")) for m in self.messages if m.get("role") != "system")

    @property
    def last_user_text(self) -> str:
        users = [m for m in self.messages if m.get("role") in ("user", "tool")]
        return _text(users[-1].get("content")) if users else ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict):
                parts.append(_text(b.get("text") if "text" in b else b.get("content", "")))
        return "\n".join(parts)
    return "" if content is None else str(content)


Script = Callable[[FakeRequest], Turn]


def scripted(turns: Sequence[Turn]) -> Script:
    """The same list of turns for every conversation: turn i answers the i-th call of a conversation."""

    def script(req: FakeRequest) -> Turn:
        if req.turn >= len(turns):
            return Turn(always=400, text=f"fake model: the script has no turn {req.turn} (it has {len(turns)})")
        return turns[req.turn]

    return script


class FakeModelServer:
    """A threaded HTTP server on 127.0.0.1 (``port``, or a free one), started and stopped as a context manager."""

    def __init__(self, script: Script, *, port: int = 0) -> None:
        self.script = script
        self.requests: list[FakeRequest] = []
        """Every request received, in order (errors answered included)."""
        self._hits: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._ids = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._server.handle_error = self._client_gone  # type: ignore[method-assign]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @staticmethod
    def _client_gone(request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout, a cancelled trial) is part of what this server tests: stay quiet."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            import traceback

            traceback.print_exc()

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def decide(self, req: FakeRequest) -> tuple[int, Turn]:
        """The status and turn for a request; counts attempts of identical requests for ``errors``."""
        key = req.path + json.dumps(req.body, sort_keys=True)
        with self._lock:
            self.requests.append(req)
            self._hits[key] += 1
            attempt = self._hits[key]
        turn = self.script(req)
        if turn.always is not None:
            return turn.always, turn
        if attempt <= len(turn.errors):
            return turn.errors[attempt - 1], turn
        return 200, turn


def _handler(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0]
            if path.endswith("/chat/completions"):
                api: Api = "openai"
            elif path.endswith("/messages"):
                api = "anthropic"
            else:
                self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
                return
            req = FakeRequest(api, path, body)
            status, turn = server.decide(req)
            if turn.delay_s:
                time.sleep(turn.delay_s)
            if status != 200:
                self._error(api, status, turn.text or f"fake error {status}", turn.retry_after)
                return
            n = server._next_id()
            answer = _OpenAIAnswer(req, turn, n) if api == "openai" else _AnthropicAnswer(req, turn, n)
            if body.get("stream"):
                self._sse(answer.events(), turn)
            else:
                self._json(200, answer.whole())

        def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def _error(self, api: Api, status: int, message: str, retry_after: float = 0.0) -> None:
            headers = {"retry-after": f"{retry_after:g}"} if status == 429 else {}
            kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
            if api == "openai":
                self._json(status, {"error": {"message": message, "type": kind, "code": None}}, headers)
            else:
                self._json(status, {"type": "error", "error": {"type": kind, "message": message}}, headers)

        def _sse(self, events: list[tuple[str | None, Any]], turn: Turn) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for i, (name, data) in enumerate(events):
                prefix = f"event: {name}\n" if name else ""
                payload = data if isinstance(data, str) else json.dumps(data)
                self.wfile.write(f"{prefix}data: {payload}\n\n".encode())
                self.wfile.flush()
                if i == 0 and turn.garbage:
                    self.wfile.write(f"{prefix}data: <html>502 Bad Gateway</html>\n\n".encode())
                    self.wfile.flush()
                if i == 0 and turn.stall_s:
                    time.sleep(turn.stall_s)
            self.close_connection = True

    return Handler


def _tokens(req: FakeRequest, turn: Turn) -> tuple[int, int]:
    size = len(turn.text) + sum(len(json.dumps(c.arguments)) + len(c.name) for c in turn.tool_calls)
    inp = turn.input_tokens if turn.input_tokens is not None else max(1, len(json.dumps(req.body)) // 4)
    out = turn.output_tokens if turn.output_tokens is not None else max(1, size // 4)
    return inp, out


def _args_text(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


class _OpenAIAnswer:
    def __init__(self, req: FakeRequest, turn: Turn, n: int) -> None:
        self.req, self.turn, self.n = req, turn, n
        self.inp, self.out = _tokens(req, turn)
        self.finish = "tool_calls" if turn.tool_calls else "stop"

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": f"chatcmpl-{self.n}", "object": "chat.completion.chunk", "created": 0, "model": self.req.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def events(self) -> list[tuple[str | None, Any]]:
        out: list[tuple[str | None, Any]] = [(None, self._chunk({"role": "assistant", "content": ""}))]
        words = self.turn.text.split(" ")
        for i, word in enumerate(words if self.turn.text else []):
            out.append((None, self._chunk({"content": word if i == 0 else " " + word})))
        for i, call in enumerate(self.turn.tool_calls):
            args = _args_text(call.arguments)
            first = {"index": i, "id": f"call_{self.n}_{i}", "type": "function",
                     "function": {"name": call.name, "arguments": ""}}
            out.append((None, self._chunk({"tool_calls": [first]})))
            half = len(args) // 2  # split the arguments, as real servers stream them in pieces
            for piece in (args[:half], args[half:]):
                out.append((None, self._chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})))
        out.append((None, self._chunk({}, self.finish)))
        out.append((None, {"id": f"chatcmpl-{self.n}", "object": "chat.completion.chunk", "created": 0,
                           "model": self.req.model, "choices": [],
                           "usage": {"prompt_tokens": self.inp, "completion_tokens": self.out,
                                     "total_tokens": self.inp + self.out}}))
        out.append((None, "[DONE]"))
        return out

    def whole(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.turn.text or None}
        if self.turn.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{self.n}_{i}", "type": "function",
                 "function": {"name": c.name, "arguments": _args_text(c.arguments)}}
                for i, c in enumerate(self.turn.tool_calls)
            ]
        return {"id": f"chatcmpl-{self.n}", "object": "chat.completion", "created": 0, "model": self.req.model,
                "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
                "usage": {"prompt_tokens": self.inp, "completion_tokens": self.out, "total_tokens": self.inp + self.out}}


class _AnthropicAnswer:
    def __init__(self, req: FakeRequest, turn: Turn, n: int) -> None:
        self.req, self.turn, self.n = req, turn, n
        self.inp, self.out = _tokens(req, turn)
        self.stop = "tool_use" if turn.tool_calls else "end_turn"

    def _content(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": self.turn.text}] if self.turn.text else []
        for i, c in enumerate(self.turn.tool_calls):
            args = c.arguments if isinstance(c.arguments, dict) else {}
            blocks.append({"type": "tool_use", "id": f"toolu_{self.n}_{i}", "name": c.name, "input": args})
        return blocks

    def events(self) -> list[tuple[str | None, Any]]:
        msg: dict[str, Any] = {
            "id": f"msg_{self.n}", "type": "message", "role": "assistant", "content": [], "model": self.req.model,
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": self.inp, "output_tokens": 1},
        }
        out: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": msg})]
        index = 0
        if self.turn.text:
            out.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                 "content_block": {"type": "text", "text": ""}}))
            for i, word in enumerate(self.turn.text.split(" ")):
                out.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": "text_delta", "text": word if i == 0 else " " + word}}))
            out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        for i, c in enumerate(self.turn.tool_calls):
            out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": f"toolu_{self.n}_{i}", "name": c.name, "input": {}}}))
            args = _args_text(c.arguments)
            half = len(args) // 2
            for piece in (args[:half], args[half:]):
                out.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": "input_json_delta", "partial_json": piece}}))
            out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        out.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": self.stop, "stop_sequence": None},
                                      "usage": {"output_tokens": self.out}}))
        out.append(("message_stop", {"type": "message_stop"}))
        return out

    def whole(self) -> dict[str, Any]:
        return {"id": f"msg_{self.n}", "type": "message", "role": "assistant", "content": self._content(),
                "model": self.req.model, "stop_reason": self.stop, "stop_sequence": None,
                "usage": {"input_tokens": self.inp, "output_tokens": self.out}}


def busiest_window(requests: Sequence[FakeRequest], window_s: float) -> int:
    """The most requests received within any ``window_s``-long stretch (a sliding window)."""
    times = sorted(r.received_at for r in requests)
    most, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window_s:
            start += 1
        most = max(most, end - start + 1)
    return most
