"""The HTTP face of the tool server: a small ASGI application, routed by trial.

``/trials/{id}`` and everything under it belongs to one trial and needs that trial's bearer token; a
request without it, with another trial's token, or for an id that does not exist gets 401 and never
reaches an episode, so nothing is recorded. Routes (relative to ``/trials/{id}``):

- ``GET /`` the trial's start message; ``GET /tools`` the tools; ``POST /tools/{name}`` a call;
- ``POST /user`` a message to the simulated user; ``POST /usage`` one model call's usage;
- ``/mcp`` the same over MCP (streamable HTTP); ``POST /otlp/v1/traces`` the agent's traces;
- ``/models/NAME/...`` the model relay, with the run's ``--agent-model-relay`` (no bearer token of
  passhat's: the agent's SDK sends its own API key there).
"""

from __future__ import annotations

import hmac
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from passhat.episode import LimitExceeded
from passhat.serve.endpoint import TrialEndpoint
from passhat.serve.protocol import ReportedUsage
from passhat.serve.watch import ClientWatch
from passhat.tools.jsondata import MAX_DEPTH

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
SubApp = Callable[[TrialEndpoint, Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 4 * 1024 * 1024
"""Largest request body accepted (413 beyond): an agent cannot make the harness buffer without bound."""
TOOL_LISTS_KEPT = 64
"""Encoded tool lists kept (one per distinct set of tools: per domain, usually)."""
ENDED_KEPT = 4096
"""Ended trials remembered so a late request gets 410 "the trial is over" instead of a bare 401 (their ids and
tokens only: an ended trial's episode is not kept alive for it)."""


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    """The client closed the connection before its request body had arrived whole."""


async def read_body(receive: Receive, limit: int = MAX_BODY, *, complete: bool = False) -> bytes:
    """The whole request body, refusing more than ``limit`` bytes. ``complete``: a client that closes before
    the last byte raises :class:`ClientGone` instead of leaving a truncated (or empty) body to act on."""
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):  # whole at once: the usual
        body: bytes = message.get("body", b"")
        if len(body) > limit:
            raise BodyTooLarge
        return body
    chunks: list[bytes] = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            if complete:
                raise ClientGone
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
        message = await receive()
    return b"".join(chunks)


def encode_json(data: Any) -> bytes:
    """``data`` as UTF-8 JSON (pydantic-core's writer: a fifth of ``json.dumps``'s time). What cannot be
    written so (a lone surrogate in a string) goes out with ASCII escapes instead of failing the answer."""
    try:
        return to_json(data, fallback=str, inf_nan_mode="constants")
    except (ValueError, TypeError):  # PydanticSerializationError is a ValueError
        return json.dumps(data, default=str).encode("ascii")


async def send_json(send: Send, status: int, data: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send_raw_json(send, status, encode_json(data), headers)


async def send_raw_json(send: Send, status: int, raw: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """An answer whose JSON body is encoded already."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": raw})


TRIAL_OVER_CODE = -32000
"""JSON-RPC code of an MCP request to a trial that is over (HTTP 410); an implementation-defined server error."""
INVALID_REQUEST_CODE = -32600
"""JSON-RPC code of every other MCP request refused before it reaches a tool (401, 404, 413, 415, SDK's 4xx)."""
INTERNAL_ERROR_CODE = -32603
"""JSON-RPC code of an MCP request the tool server cannot serve right now (503)."""


def jsonrpc_error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    """The one error shape of every MCP answer that is an error, whatever its HTTP status."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


async def send_error(send: Send, status: int, message: str, *, mcp: bool, code: int = INVALID_REQUEST_CODE,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """An error answer: JSON-RPC on the MCP route (``mcp``), ``{"error": message}`` elsewhere."""
    await send_json(send, status, jsonrpc_error(code, message) if mcp else {"error": message}, headers)


def bearer(scope: Scope) -> str | None:
    """The request's bearer token (its first ``Authorization`` field's); ``None`` without one."""
    value = dict(reversed(scope.get("headers", []))).get(b"authorization")  # the first such field wins
    if value is None:
        return None
    scheme, _, token = value.decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


class TrialRouter:
    """Routes requests to the trial endpoints currently open."""

    def __init__(self) -> None:
        self.open: dict[str, TrialEndpoint] = {}
        self.ended: OrderedDict[str, bytes] = OrderedDict()
        """The ids of the last :data:`ENDED_KEPT` trials to end, with their tokens (so only a request with the right
        one learns that the trial is over). Not the endpoints: each holds its episode (the trial's record, its
        world), and keeping 4096 of them alive grew the heap by ~70 objects per trial for the collector to walk."""
        self.refused = 0
        """Requests answered 401 (no or wrong token, unknown trial)."""
        self.mcp: SubApp | None = None
        """Serves ``/mcp`` when the ``mcp`` extra is installed."""
        self.otlp: SubApp | None = None
        """Serves ``/otlp/v1/traces``."""
        self._tool_lists: dict[tuple[int, ...], tuple[tuple[Any, ...], bytes]] = {}
        self.models: SubApp | None = None
        """Serves ``/models/NAME/...``: the model relay (:mod:`passhat.serve.model_relay`), when the run has one."""

    def _tool_list(self, endpoint: TrialEndpoint) -> bytes:
        """``GET {tools_url}``'s answer, encoded once per set of tools (every trial of a domain lists the same)."""
        tools = tuple(endpoint.episode.tools)
        key = tuple(map(id, tools))
        cached = self._tool_lists.get(key)
        if cached is None:
            if len(self._tool_lists) >= TOOL_LISTS_KEPT:
                self._tool_lists.clear()
            # the tools are kept with their answer, so no other tool can take one of their ids meanwhile
            cached = self._tool_lists[key] = (tools, encode_json({"tools": [t.spec() for t in tools]}))
        return cached[1]

    def add(self, endpoint: TrialEndpoint) -> None:
        self.open[endpoint.id] = endpoint

    def remove(self, endpoint: TrialEndpoint) -> None:
        endpoint.ended.set()
        self.open.pop(endpoint.id, None)
        self.ended[endpoint.id] = endpoint.token.encode()
        while len(self.ended) > ENDED_KEPT:
            self.ended.popitem(last=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            if kind == "lifespan":
                await _lifespan(receive, send)
            return
        parts = scope["path"].strip("/").split("/")
        if len(parts) < 2 or parts[0] != "trials":
            await send_json(send, 404, {"error": f"no such path {scope['path']!r}; trial URLs look like /trials/ID/tools"})
            return
        trial_id, rest = parts[1], parts[2:]
        if rest and rest[0] == "models" and self.models is not None:
            await self._relay(trial_id, scope, receive, send)
            return
        token = bearer(scope)
        endpoint = self.open.get(trial_id)
        if endpoint is None or not endpoint.authorized(token):
            gone = self.ended.get(trial_id)
            mcp = rest[:1] == ["mcp"]  # over MCP, a JSON-RPC error body is what clients show their users
            if gone is not None and token is not None and hmac.compare_digest(token.encode(), gone):
                await send_error(send, 410, "the trial is over; no more calls are accepted", mcp=mcp,
                                 code=TRIAL_OVER_CODE)
                return
            self.refused += 1
            message = "missing or wrong bearer token for this trial"
            # RFC 6750 with a realm and no resource_metadata or scope: a static token, not an invitation to OAuth
            challenge = (b'Bearer realm="passhat"' if token is None else
                         b'Bearer realm="passhat", error="invalid_token", error_description="' + message.encode() + b'"')
            await send_error(send, 401, message, mcp=mcp, headers=[(b"www-authenticate", challenge)])
            return
        endpoint.requests += 1
        try:
            await self._route(endpoint, rest, scope, receive, send)
        except BodyTooLarge:
            await send_error(send, 413, f"request body larger than {MAX_BODY} bytes", mcp=rest[:1] == ["mcp"])

    async def _relay(self, trial_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        """The model relay's requests carry the agent's own API key as their bearer, so the trial's random URL
        is their credential (valid while the trial runs; from a sandbox only its own trial's is reachable)."""
        endpoint = self.open.get(trial_id)
        if endpoint is None:
            status = 410 if trial_id in self.ended else 404
            await send_json(send, status, {"error": "the trial is over: its model relay is closed" if status == 410
                                           else "no such trial"})
            return
        assert self.models is not None
        endpoint.requests += 1
        await self.models(endpoint, scope, receive, send)

    async def _route(self, endpoint: TrialEndpoint, rest: list[str], scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if len(rest) == 2 and rest[0] == "tools" and method == "POST":  # a tool call: the most frequent route first
            await _call(endpoint, rest[1], scope, receive, send)
            return
        if rest and rest[0] == "mcp":
            if self.mcp is None:
                await send_error(send, 404, "MCP is not available: pip install 'passhat[mcp]'", mcp=True)
            else:
                await self.mcp(endpoint, scope, receive, send)
            return
        if rest[:1] == ["otlp"]:
            if rest[1:] != ["v1", "traces"] or self.otlp is None:
                await send_json(send, 404, {"error": "only OTLP traces are received: POST {otlp_url}/v1/traces"})
            else:
                await self.otlp(endpoint, scope, receive, send)
            return
        route = (method, tuple(rest[:1]))
        if route == ("GET", ()):
            await send_json(send, 200, endpoint.start().model_dump(mode="json"))
        elif route == ("GET", ("tools",)) and len(rest) == 1:
            await send_raw_json(send, 200, self._tool_list(endpoint))
        elif route == ("POST", ("user",)) and len(rest) == 1:
            await _say(endpoint, receive, send)
        elif route == ("POST", ("usage",)) and len(rest) == 1:
            await _usage(endpoint, receive, send)
        else:
            await send_json(send, 404, {"error": f"no route {method} {scope['path']}; see the trial's start message"})


async def _call(endpoint: TrialEndpoint, name: str, scope: Scope, receive: Receive, send: Send) -> None:
    try:
        raw = await read_body(receive, complete=True)
    except ClientGone:
        return  # closed before its request arrived whole: no call was made (the body is not there to record)
    try:
        arguments: Any = _arguments(raw)
    except ValueError:
        arguments = raw.decode("utf-8", "replace")  # recorded as the agent sent it; the boundary refuses it
    except RecursionError:  # nested past the parser's stack: recorded as the boundary records too-deep data
        arguments = f"<nested deeper than {MAX_DEPTH} levels>"
    if endpoint.ended.is_set():
        await send_json(send, 410, {"error": "the trial is over; no more calls are accepted"})
        return
    client = ClientWatch.of(scope, receive)
    try:
        answer = await endpoint.call(name, arguments, client)
        if answer.withheld:
            await endpoint.hold(client)
            await send_json(send, 504, {"error": "no response (the trial ended while the call was pending)"})
        elif not answer.abandoned:  # an abandoned answer has nobody to go to
            await send_json(send, 409 if answer.limit else 200, answer.body())
    finally:
        client.stop()


_decode_json = json.JSONDecoder().decode


def _arguments(raw: bytes) -> Any:
    """A tool call's JSON arguments, as ``json.loads`` reads them (an empty body: ``{}``). A body that opens an
    object with a non-NUL byte after it is UTF-8 to ``json.loads`` (``json.detect_encoding``): decoded here
    directly, with the same error handler; anything else goes through ``json.loads``."""
    if raw[:1] == b"{" and raw[1:2] != b"\x00":
        return _decode_json(raw.decode("utf-8", "surrogatepass"))
    return json.loads(raw) if raw.strip() else {}


async def _say(endpoint: TrialEndpoint, receive: Receive, send: Send) -> None:
    try:
        data = json.loads(await read_body(receive))
        text = data["text"]
        if not isinstance(text, str):
            raise TypeError
    except (ValueError, KeyError, TypeError, RecursionError):
        await send_json(send, 400, {"error": 'expected a JSON object {"text": "..."}'})
        return
    try:
        reply = await endpoint.say(text)
    except LimitExceeded as exc:
        await send_json(send, 409, {"error": str(exc), "limit": exc.reason})
        return
    await send_json(send, 200, {"reply": reply})


async def _usage(endpoint: TrialEndpoint, receive: Receive, send: Send) -> None:
    try:
        usage = ReportedUsage.model_validate_json(await read_body(receive))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(body)'}: {e['msg']}" for e in exc.errors())
        await send_json(send, 400, {"error": f"invalid usage: {problems}"})
        return
    try:
        endpoint.report_usage(usage)
    except LimitExceeded as exc:
        await send_json(send, 409, {"error": str(exc), "limit": exc.reason})
        return
    await send_json(send, 200, {"ok": True})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


__all__ = ["INTERNAL_ERROR_CODE", "INVALID_REQUEST_CODE", "TRIAL_OVER_CODE", "ASGIApp", "MAX_BODY",
            "ClientGone", "SubApp", "TrialRouter", "jsonrpc_error", "read_body", "send_error", "send_json"]
