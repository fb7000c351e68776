"""A trial's tool boundary over MCP (streamable HTTP), for :class:`passhat.serve.ToolServer` (the
``passhat[mcp]`` extra; only this module and the two it composes import the SDK, and the tool server
imports it lazily).

One MCP server serves every trial of a run. The router checks the trial's bearer token before anything
else and hands the bridge that trial's :class:`TrialEndpoint`, so a request reaches only the world of the
trial whose token it carries. What a trial answers is :mod:`passhat.serve.mcp_results`.

Stateless streamable HTTP with JSON responses: nothing outlives a request, so there is no session to
expire or to clean up when a trial ends (a stateful session would outlive its trial: its closing DELETE
arrives after the router has already refused the trial's URL), and no SSE stream per client. Both eras of
the protocol are served: the ``initialize`` handshake (``ClientSession``) and the 2026-07-28 per-request
envelope (``mcp.Client`` in its default ``auto`` mode, which the OpenAI Agents SDK uses).

Two paths answer: the requests an agent's session is made of (initialize, tools/list, tools/call, …) are
answered by :mod:`passhat.serve.mcp_stateless` at a fraction of the cost; everything else by the official
``mcp`` SDK's server (``StreamableHTTPSessionManager`` in stateless JSON mode), which stays the reference
for what an answer says (docs/design/025-stateless-mcp.md).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError

from passhat import __version__
from passhat.errors import DomainError
from passhat.serve.app import (
    INTERNAL_ERROR_CODE,
    INVALID_REQUEST_CODE,
    Message,
    Receive,
    Scope,
    Send,
    jsonrpc_error,
    read_body,
    send_error,
    send_json,
)
from passhat.serve.endpoint import CallAnswer, TrialEndpoint
from passhat.serve.mcp_results import TRIAL_OVER, USER_LEFT, USER_TOOL, McpDomainError, ToolCalls, tool_entries
from passhat.serve.mcp_stateless import StatelessMcp
from passhat.serve.watch import ClientWatch, NeverGone

Context = ServerRequestContext[Any, Any]

_ENDPOINT = "passhat.endpoint"
"""ASGI scope key carrying the authorized trial endpoint from the router to the handlers."""


class _ShieldedCalls(ToolCalls):
    """Calls made from the SDK's handlers: shielded, because a client that cancels mid-call would otherwise
    cut a write, or the boundary's record of it, in half (over plain HTTP a client that goes away does not
    stop the call either)."""

    async def run(self, endpoint: TrialEndpoint, name: str, arguments: dict[str, Any] | None,
                  client: ClientWatch) -> CallAnswer:
        with anyio.CancelScope(shield=True):
            answer = await super().run(endpoint, name, arguments, client)
        return answer


def _endpoint(ctx: Context) -> TrialEndpoint:
    endpoint = ctx.request.scope.get(_ENDPOINT) if ctx.request is not None else None
    if not isinstance(endpoint, TrialEndpoint):  # only if an SDK release stopped passing the HTTP request on
        raise MCPError(code=types.INTERNAL_ERROR, message="passhat: the request did not come through a trial URL")
    return endpoint


class McpBridge:
    """Serves ``/trials/{id}/mcp`` for :class:`passhat.serve.ToolServer`, which calls
    ``await bridge(endpoint, scope, receive, send)`` once the trial's token has been checked."""

    def __init__(self, *, stateless: bool = True) -> None:
        self.server: Server[Any] = Server(
            "passhat", version=__version__, on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            # Otherwise the 2026-07-28 entry runs tools/list before every call to check `Mcp-Param-*`
            # headers against the schema; passhat's tools declare no such headers.
            get_tool_input_schema=lambda name: None,
        )
        # No OpenTelemetry span per MCP message: passhat records the trial's spans itself.
        self.server.middleware = []
        self.calls = _ShieldedCalls()
        self.stateless = StatelessMcp(ToolCalls()) if stateless else None
        """passhat's own answers to the common requests (``None``: the SDK answers every request, as a
        reference to compare against)."""
        self._manager: StreamableHTTPSessionManager | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    @property
    def held(self) -> int:
        """Calls whose answer is being withheld right now (planned timeouts and lost responses)."""
        return self.calls.held + (self.stateless.calls.held if self.stateless is not None else 0)

    async def start(self) -> None:
        """Start serving. The SDK's session manager runs in a task of its own: its task group must be left
        by the task that entered it, and the tool server may start and stop from different tasks."""
        if self._task is not None:
            return
        manager = StreamableHTTPSessionManager(app=self.server, json_response=True, stateless=True)
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stopping = asyncio.Event()

        async def run() -> None:
            try:
                async with manager.run():
                    ready.set_result(None)
                    await self._stopping.wait()
            except BaseException as exc:
                if ready.done():
                    raise
                ready.set_exception(exc)  # raised by `await ready` below instead

        self._task = asyncio.create_task(run(), name="passhat-mcp")
        await ready
        self._manager = manager

    async def stop(self) -> None:
        """Stop serving; requests still in flight are cancelled."""
        task, self._task, self._manager = self._task, None, None
        if task is not None:
            self._stopping.set()
            await task

    async def __call__(self, endpoint: TrialEndpoint, scope: Scope, receive: Receive, send: Send) -> None:
        if self._manager is None:
            await send_error(send, 503, "the MCP server is not running", mcp=True, code=INTERNAL_ERROR_CODE)
            return
        if scope["method"] == "GET":
            # no event stream of the server's own: a stateless server never sends first, and the SDK's answer, a
            # stream that stays silent, held a connection and a task until the client went away (the
            # TypeScript client opens one after `initialize`); 405 is the spec's answer, which clients expect
            await send_error(send, 405, "this MCP server sends nothing of its own: there is no event stream to "
                             "open; POST requests", mcp=True, headers=[(b"allow", b"POST")])
            return
        # Read here, under the tool server's cap (BodyTooLarge: the router answers 413), then replayed to the SDK.
        body = await read_body(receive) if scope["method"] == "POST" else b""
        if self.stateless is not None and await self.stateless.answer(endpoint, scope, body, receive, send):
            return
        await self._manager.handle_request({**scope, _ENDPOINT: endpoint}, _replay(body, receive), _as_jsonrpc(send))

    async def _list_tools(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        try:
            endpoint = _endpoint(ctx)
            tools = tool_entries(endpoint.episode.domain, endpoint.tool_specs())
        except DomainError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"passhat: {exc}") from exc
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in tools])

    async def _call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        endpoint = _endpoint(ctx)
        client = _client_watch(ctx)
        try:
            result = await self.calls.call(endpoint, params.name, params.arguments, client)
        except McpDomainError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from exc
        finally:
            client.stop()
        return types.CallToolResult.model_validate(result)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` for a request whose body was read already: the body once, then the connection's own messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _as_jsonrpc(send: Send) -> Send:
    """``send`` with the SDK's few plain-text error answers (415 or 400 for a wrong Content-Type, 413) turned
    into the JSON-RPC error shape of every other MCP error, status kept: clients show ``error.message``."""
    held: Message | None = None
    text = bytearray()

    async def wrapped(message: Message) -> None:
        nonlocal held
        if message["type"] == "http.response.start":
            kind = dict(message.get("headers") or []).get(b"content-type", b"")
            if message["status"] >= 400 and not kind.startswith(b"application/json"):
                held = message  # its body, however many parts it comes in, decides the text
                return
        elif message["type"] == "http.response.body" and held is not None:
            text.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            status, held = held["status"], None
            said = bytes(text).decode("utf-8", "replace").strip() or "request refused"
            await send_json(send, status, jsonrpc_error(INVALID_REQUEST_CODE, said))
            return
        await send(message)

    return wrapped


def _client_watch(ctx: Context) -> ClientWatch:
    """Watches the connection of the request being answered.

    The 2026-07-28 client closes it when it gives up on a request. The handshake-era client keeps it open
    and posts a cancellation instead, which a stateless server cannot match to the request: its call is
    held until it closes its connection (as it does when it exits) or the trial ends."""
    return NeverGone() if ctx.request is None else ClientWatch.of(ctx.request.scope, ctx.request.receive)


__all__ = ["TRIAL_OVER", "USER_LEFT", "USER_TOOL", "McpBridge"]
