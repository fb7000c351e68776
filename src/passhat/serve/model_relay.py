"""The model relay: the model calls an agent makes itself, watched for stalls on their way to its provider.

passhat's own model clients find a provider that accepts a call and then stalls (passhat/outages.py, rule
2b). An agent that calls its provider through its own SDK — a ``cmd:`` program using the ``openai`` SDK, an
in-process agent with its own ``AsyncOpenAI``, a LangGraph or pydantic-ai agent — was measured by its time
limit only: a stall was scored as its ``fail``. Pointed at the relay instead (its SDK's base URL: design
022), such an agent's traffic passes through passhat on the run's tool server, at
``{trial_url}/models/NAME/...``: so the relay knows the trial of every request, and a sandboxed agent
reaches it through the socket it already has for its tools. Per request the relay

- forwards the method, path, query, headers (the agent's own API key among them) and body, at most
  :data:`MAX_REQUEST_BYTES`, to the upstream the user named, TLS verified;
- for a streamed request (``"stream": true`` in the JSON body, or ``Accept: text/event-stream``) waits for
  the response headers at most :func:`~passhat.outages.stall_budget`. A non-streamed answer starts only
  once the model has finished, so there that wait is the model's latency (design 007), not a stall;
- passes the body on chunk by chunk as it arrives, never buffering, and waits for each piece of *data*
  at most the stall budget: SSE comments and ``ping`` events are no sign of life (:mod:`passhat.serve.sse`);
- on a stall, a stream dropped mid-answer or an answer past :data:`MAX_RESPONSE_BYTES`, declares the
  outage on the trial's watch — the runner ends the trial as ``error`` with that description, whatever
  the agent returns — and tells the agent: 504 before the headers, after them an SSE ``error`` event (both
  SDKs raise it as an API error);
- counts attempts that got no answer (stalls, refused connections, 5xx) in one circuit breaker per
  upstream, shared by the run's trials; while it is open, a request is answered 503 at once and its trial
  is ``error`` ("circuit open").

A 5xx or a refused connection is passed on to the agent, whose SDK retries it as passhat's own clients
would. The failing call stays in the trial's watch until an answer comes: a time limit reached meanwhile
is the provider's (rule 2), and so is a trial whose agent ends before then (the runner checks).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import Sequence
from typing import Any

from passhat import outages
from passhat.errors import InfrastructureError
from passhat.outages import CircuitBreaker, ProviderCall, TrialWatch
from passhat.serve.app import BodyTooLarge, ClientGone, Receive, Scope, Send, read_body
from passhat.serve.endpoint import TrialEndpoint
from passhat.serve.model_upstreams import ModelUpstream
from passhat.serve.sse import SseEvents
from passhat.serve.watch import ClientWatch

MAX_REQUEST_BYTES = 32 * 1024 * 1024
"""Largest request body relayed (413 beyond): a prompt with images is megabytes, never this."""
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""Largest answer relayed: some million tokens of text, past any model's output; more is a broken upstream."""
CONNECT_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 30.0
_NOT_FORWARDED = frozenset({b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization",
                            b"proxy-connection", b"te", b"trailer", b"transfer-encoding", b"upgrade", b"host",
                            b"content-length", b"accept-encoding"})
"""Hop-by-hop headers, and those the relay sets itself: the body is re-framed (chunked) on the way back,
and asked for uncompressed, so the SSE events can be told apart."""


def _error_body(message: str) -> dict[str, Any]:
    """An error in the shape both SDKs read a message from (OpenAI's ``error.message``, Anthropic's)."""
    return {"type": "error", "error": {"type": "passhat_model_relay", "message": message}}


class _Reply:
    """The response to the agent, and how far it got (so whatever ends the exchange can close it cleanly)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.complete = False
        self.sse = False

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.started = True
        await self._send({"type": "http.response.start", "status": status, "headers": headers})

    async def body(self, chunk: bytes, *, more: bool = True) -> None:
        self.complete = not more
        await self._send({"type": "http.response.body", "body": chunk, "more_body": more})

    async def fail(self, status: int, message: str) -> None:
        """An error status when nothing was sent yet; else the end of the body (an SSE error event first)."""
        if not self.started:
            raw = json.dumps(_error_body(message)).encode()
            await self.start(status, [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())])
            await self.body(raw, more=False)
        elif not self.complete:
            event = f"event: error\ndata: {json.dumps(_error_body(message))}\n\n".encode() if self.sse else b""
            await self.body(event, more=False)


def _asks_to_stream(headers: list[tuple[bytes, bytes]], body: bytes) -> bool:
    """Whether the agent asked for a streamed answer (OpenAI's and Anthropic's ``"stream": true``, or SSE)."""
    for name, value in headers:
        if name == b"accept" and b"text/event-stream" in value:
            return True
    if not body.lstrip().startswith(b"{"):
        return False
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # forwarded as sent: the provider refuses it
        return False
    return isinstance(data, dict) and data.get("stream") is True


class ModelRelay:
    """Relays the model calls of every trial of a run to the upstreams it was given (module docstring)."""

    def __init__(self, upstreams: Sequence[ModelUpstream]) -> None:
        self.upstreams = {u.name: u for u in upstreams}
        self.breakers = {u.name: CircuitBreaker() for u in upstreams}
        """Rule 3 per upstream: a dead provider is found once for the run, not once per trial."""
        self._failing: weakref.WeakKeyDictionary[TrialWatch, dict[str, ProviderCall]] = weakref.WeakKeyDictionary()
        self._client: tuple[asyncio.AbstractEventLoop, Any] | None = None

    def urls(self, trial_url: str) -> dict[str, str]:
        """The base URL of each upstream for the trial at ``trial_url``."""
        return {name: f"{trial_url}/models/{name}" for name in self.upstreams}

    def describe(self) -> dict[str, str]:
        """What the manifest records: name → upstream URL."""
        return {name: u.url for name, u in self.upstreams.items()}

    def _http(self) -> Any:
        """One client per event loop (an HTTP client must not outlive its loop); TLS verified, no redirects."""
        import httpx2

        loop = asyncio.get_running_loop()
        if self._client is None or self._client[0] is not loop:
            timeout = httpx2.Timeout(None, connect=CONNECT_TIMEOUT_S, write=WRITE_TIMEOUT_S)  # reads: the stall budget
            limits = httpx2.Limits(max_connections=None, max_keepalive_connections=64)
            self._client = (loop, httpx2.AsyncClient(timeout=timeout, limits=limits, follow_redirects=False))
        return self._client[1]

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and client[0] is asyncio.get_running_loop():
            await client[1].aclose()

    async def __call__(self, endpoint: TrialEndpoint, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request under ``/trials/{id}/models/``; the router has found its (open) trial."""
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        segments = raw_path.split(b"?", 1)[0].lstrip(b"/").split(b"/")  # trials, ID, models, NAME, rest...
        name = segments[3].decode("latin-1") if len(segments) > 3 else ""
        upstream = self.upstreams.get(name)
        reply = _Reply(send)
        if upstream is None:
            known = ", ".join(sorted(self.upstreams)) or "none"
            await reply.fail(404, f"no model relay named {name!r} in this run (its relays: {known})")
            return
        watch = endpoint.watch
        outages.CURRENT_TRIAL.set(watch)  # this request's own task: the stall budget is its trial's
        path = b"/" + b"/".join(segments[4:])
        query: bytes = scope.get("query_string", b"")
        what = f"model relay {name} ({scope['method']} {path.decode('latin-1')})"
        if watch is not None and watch.outage is not None:
            await reply.fail(503, f"not forwarded: this trial already met an outage ({watch.outage})")
            return
        try:
            self.breakers[name].check(what)
        except InfrastructureError as exc:
            self._unanswered(watch, name, str(exc), declare=True)
            await reply.fail(503, str(exc))
            return
        try:
            body = await read_body(receive, MAX_REQUEST_BYTES, complete=True)
        except BodyTooLarge:
            await reply.fail(413, f"request body larger than {MAX_REQUEST_BYTES // 2**20} MB: not relayed")
            return
        except ClientGone:
            return
        headers = [(k, v) for k, v in scope.get("headers", []) if k not in _NOT_FORWARDED]
        url = upstream.url.encode() + path + (b"?" + query if query else b"")
        request = self._http().build_request(scope["method"], url.decode("latin-1"),
                                             headers=[*headers, (b"accept-encoding", b"identity")], content=body)
        await self._exchange(endpoint, request, _asks_to_stream(headers, body), what, name, receive, reply)

    async def _exchange(self, endpoint: TrialEndpoint, request: Any, streamed: bool, what: str, name: str,
                        receive: Receive, reply: _Reply) -> None:
        """Forward until the answer is relayed, the agent goes away or the trial ends (then the upstream
        request is dropped: nobody waits for it)."""
        client = ClientWatch(receive)
        forward = asyncio.ensure_future(self._forward(endpoint.watch, request, streamed, what, name, reply))
        gone = asyncio.ensure_future(client.wait())
        ended = asyncio.ensure_future(endpoint.ended.wait())
        try:
            await asyncio.wait({forward, gone, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (forward, gone, ended):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            client.stop()
        if forward.done() and not forward.cancelled():
            forward.result()  # a bug of the relay surfaces as one (the tool server logs it), never silently
        await reply.fail(503, "the trial is over: not relayed further")  # no-op when the answer went out whole

    async def _forward(self, watch: TrialWatch | None, request: Any, streamed: bool, what: str, name: str,
                       reply: _Reply) -> None:
        import httpx2

        with watch.call(what) if watch is not None else contextlib.nullcontext() as call:
            sending = self._http().send(request, stream=True)
            try:
                response = await (outages.unless_stalled(sending, what, "response headers") if streamed else sending)
            except outages.ProviderStalled as exc:
                self._unanswered(watch, name, str(exc), declare=True)
                await reply.fail(504, str(exc))
                return
            except httpx2.HTTPError as exc:
                refused = f"{what}: no answer from the provider ({type(exc).__name__}: {exc})"
                self._unanswered(watch, name, refused, declare=False)
                await reply.fail(502, refused)
                return
            try:
                if response.status_code >= 500:
                    self._unanswered(watch, name, f"{what}: {response.status_code} {response.reason_phrase}", declare=False)
                reply.sse = response.headers.get("content-type", "").startswith("text/event-stream")
                await reply.start(response.status_code,
                                  [(k, v) for k, v in response.headers.raw if k.lower() not in _NOT_FORWARDED])
                problem = await self._relay_body(response, reply, what, call)
            finally:
                await response.aclose()
        if problem is not None:
            self._unanswered(watch, name, problem, declare=True)
            await reply.fail(502, problem)
        elif response.status_code < 500:
            self._answered(watch, name)
        if not reply.complete:
            await reply.body(b"", more=False)

    async def _relay_body(self, response: Any, reply: _Reply, what: str, call: ProviderCall | None) -> str | None:
        """Pass the body on as it comes; what went wrong with the provider's side of it, or ``None``."""
        import httpx2

        loop = asyncio.get_running_loop()
        events = SseEvents() if reply.sse else None
        chunks = response.aiter_raw()
        waiting_for = "stream data after the response headers"
        budget = outages.stall_budget()
        deadline = loop.time() + budget
        size = 0
        while True:
            try:
                async with asyncio.timeout_at(deadline) as scope:
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                return None
            except TimeoutError:
                if scope.expired():
                    return str(outages.stalled(what, waiting_for, budget))
                raise
            except httpx2.HTTPError as exc:
                return f"{what}: the provider dropped the answer mid-way ({type(exc).__name__}: {exc})"
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                return f"{what}: the provider's answer is larger than {MAX_RESPONSE_BYTES // 2**20} MB"
            sent = loop.time()
            await reply.body(chunk)
            deadline += loop.time() - sent  # an agent that reads slowly does not make the provider silent
            if events is None or events.feed(chunk):
                if call is not None:
                    call.data()
                waiting_for = "further stream data"
                budget = outages.stall_budget()
                deadline = loop.time() + budget

    def _unanswered(self, watch: TrialWatch | None, name: str, problem: str, *, declare: bool) -> None:
        """An attempt that got no (whole) answer: counted by the breaker; declared on the trial, or kept in its
        watch as a failing call (rule 2) until an answer comes."""
        self.breakers[name].failure(problem)
        if watch is None:
            return
        if declare:
            watch.declare_outage(problem)
            return
        failing = self._failing.setdefault(watch, {})
        if name not in failing:
            failing[name] = ProviderCall(f"model relay {name}")
            watch.active.append(failing[name])
        failing[name].failures.append(problem.partition(": ")[2] or problem)

    def _answered(self, watch: TrialWatch | None, name: str) -> None:
        self.breakers[name].success()
        call = self._failing.get(watch, {}).pop(name, None) if watch is not None else None
        if call is not None and watch is not None and call in watch.active:
            watch.active.remove(call)


__all__ = ["MAX_REQUEST_BYTES", "MAX_RESPONSE_BYTES", "ModelRelay"]
