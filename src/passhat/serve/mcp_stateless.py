"""passhat's own answers to the MCP requests an agent's session is made of, without the SDK's machinery.

The tool server's MCP is stateless streamable HTTP with JSON answers: every request stands alone. The SDK
still builds, for each request, a transport, a JSON-RPC dispatcher, a server session, memory streams and
a task (its stateless mode is its stateful one, set up and torn down per request): ~1 ms of CPU, and a
trial makes eight or nine requests. Here a request an agent's session is made of is answered directly,
with the words and HTTP statuses the SDK uses (``tests/serve/test_mcp_stateless.py`` checks both paths
give the same answers, and the official Python and TypeScript clients pass against it); the choice, with
its measurements, is docs/design/025-stateless-mcp.md.

Answered here: a ``POST`` whose ``Content-Type`` is JSON and whose ``Accept`` takes JSON, carrying one
well-formed JSON-RPC request or notification —

- handshake era (no ``MCP-Protocol-Version`` header, or one of the handshake versions): ``initialize``
  (the client's version if it is one of them, else the latest), ``ping``, ``tools/list``, ``tools/call``,
  and any ``notifications/…`` (``202``, dropped: nothing outlives a request);
- 2026-07-28 era (the per-request envelope, checked by the SDK's own validation ladder):
  ``server/discover``, ``tools/list``, ``tools/call``.

Everything else — another method, a malformed or rejected message, a ``GET`` or ``DELETE``, a version
nobody speaks — goes on to the SDK, which answers it as before.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.shared.inbound import InboundModernRoute, classify_inbound_request, find_duplicated_routing_header
from mcp_types import INTERNAL_ERROR, SERVER_INFO_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from passhat import __version__
from passhat.serve.app import Receive, Scope, Send, jsonrpc_error, send_json
from passhat.serve.endpoint import TrialEndpoint
from passhat.serve.mcp_results import McpDomainError, ToolCalls, tool_entries
from passhat.serve.watch import ClientWatch

SERVER_INFO = {"name": "passhat", "version": __version__}
CAPABILITIES = {"tools": {"listChanged": False}}
MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)
HANDSHAKE = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)
HANDSHAKE_METHODS = frozenset({"initialize", "ping", "tools/list", "tools/call"})
MODERN_METHODS = frozenset({"server/discover", "tools/list", "tools/call"})

Answer = tuple[int, dict[str, Any] | None]
"""HTTP status and JSON-RPC body (``None``: an empty ``202``)."""


class StatelessMcp:
    """Answers the common MCP requests of one tool server (module docstring)."""

    def __init__(self, calls: ToolCalls) -> None:
        self.calls = calls
        self.answered = 0
        """Requests answered here (the rest went to the SDK)."""

    async def answer(self, endpoint: TrialEndpoint, scope: Scope, body: bytes, receive: Receive, send: Send) -> bool:
        """Answer the request if it is one of ours; ``False`` (nothing sent) leaves it to the SDK."""
        message = _request(scope, body)
        if message is None:
            return False
        version, decoded = message
        if version in MODERN:
            answered = await self._modern(endpoint, scope, decoded, receive)
        else:
            answered = await self._handshake(endpoint, scope, decoded, receive)
        if answered is None:
            return False
        status, reply = answered
        self.answered += 1
        if reply is None:
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
        else:
            await send_json(send, status, reply)
        return True

    async def _handshake(self, endpoint: TrialEndpoint, scope: Scope, message: dict[str, Any],
                         receive: Receive) -> Answer | None:
        method, params = message["method"], message.get("params")
        if "id" not in message:
            return (202, None) if method.startswith("notifications/") else None
        if method not in HANDSHAKE_METHODS:
            return None
        request_id = message["id"]
        if method == "initialize":
            if not _is_initialize(params):
                return None
            assert params is not None
            asked = params["protocolVersion"]
            return 200, _result(request_id, {
                "capabilities": CAPABILITIES, "protocolVersion": asked if asked in HANDSHAKE else LATEST_HANDSHAKE_VERSION,
                "serverInfo": SERVER_INFO,
            })
        if method == "ping":
            return 200, _result(request_id, {})
        if method == "tools/list":
            return await self._list(endpoint, request_id, {})
        return await self._call(endpoint, scope, request_id, params, receive, {})

    async def _modern(self, endpoint: TrialEndpoint, scope: Scope, message: dict[str, Any],
                      receive: Receive) -> Answer | None:
        method = message["method"]
        if "id" not in message or method not in MODERN_METHODS:
            return None
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        if find_duplicated_routing_header(headers) is not None:
            return None
        if not isinstance(classify_inbound_request(message, headers=dict(headers)), InboundModernRoute):
            return None  # the SDK words the rejection
        extra = {"resultType": "complete", "_meta": {SERVER_INFO_META_KEY: SERVER_INFO}}
        request_id = message["id"]
        if method == "server/discover":
            return 200, _result(request_id, {"cacheScope": "private", "capabilities": CAPABILITIES,
                                             "supportedVersions": list(MODERN_PROTOCOL_VERSIONS), "ttlMs": 0, **extra})
        if method == "tools/list":
            return await self._list(endpoint, request_id, {"cacheScope": "private", "ttlMs": 0, **extra})
        return await self._call(endpoint, scope, request_id, message["params"], receive, extra)

    async def _list(self, endpoint: TrialEndpoint, request_id: Any, extra: dict[str, Any]) -> Answer:
        try:
            tools = tool_entries(endpoint.episode.domain, endpoint.tool_specs())
        except Exception as exc:  # a DomainError: the SDK path answers it so too
            return 200, jsonrpc_error(INTERNAL_ERROR, f"passhat: {exc}", request_id)
        return 200, _result(request_id, {"tools": tools, **extra})

    async def _call(self, endpoint: TrialEndpoint, scope: Scope, request_id: Any, params: Any, receive: Receive,
                    extra: dict[str, Any]) -> Answer | None:
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return None
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            return None
        client = ClientWatch.of(scope, receive)
        try:
            result = await self.calls.call(endpoint, params["name"], arguments, client)
        except McpDomainError as exc:
            return 200, jsonrpc_error(INTERNAL_ERROR, str(exc), request_id)
        finally:
            client.stop()
        return 200, _result(request_id, {**result, **extra})


def _request(scope: Scope, body: bytes) -> tuple[str | None, dict[str, Any]] | None:
    """The protocol version and the decoded message of a request this path answers, else ``None``."""
    if scope["method"] != "POST":
        return None
    version = accept = content_type = None
    for name, value in scope["headers"]:
        if name == b"mcp-protocol-version":
            version = value.decode("latin-1")
        elif name == b"accept":
            accept = value.decode("latin-1")
        elif name == b"content-type":
            content_type = value.decode("latin-1")
    if version is not None and version not in HANDSHAKE and version not in MODERN:
        return None
    if not _takes_json(accept) or not _is_json(content_type):
        return None
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(decoded, dict) or decoded.get("jsonrpc") != "2.0" or not isinstance(decoded.get("method"), str):
        return None
    if "id" in decoded and (type(decoded["id"]) not in (int, str)):
        return None  # a null or odd id: the SDK decides what it is
    if decoded.get("params") is not None and not isinstance(decoded["params"], dict):
        return None
    return version, decoded


def _takes_json(accept: str | None) -> bool:
    """As the SDK reads ``Accept`` (media types with RFC 7231 wildcards; none at all takes nothing)."""
    types = {part.split(";")[0].strip().lower() for part in (accept or "").split(",")}
    return bool(types & {"application/json", "application/*", "*/*"})


def _is_json(content_type: str | None) -> bool:
    return any(part.strip() == "application/json" for part in (content_type or "").split(";")[0].split(","))


def _is_initialize(params: Any) -> bool:
    """The ``initialize`` parameters the SDK accepts: a version, capabilities and the client's name and version."""
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return False
    info = params.get("clientInfo")
    return (isinstance(params.get("capabilities"), dict) and isinstance(info, dict)
            and isinstance(info.get("name"), str) and isinstance(info.get("version"), str))


def _result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


__all__ = ["StatelessMcp"]
