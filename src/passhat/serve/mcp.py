"""A trial's tool boundary over MCP (streamable HTTP), served with the official ``mcp`` SDK (the
``passhat[mcp]`` extra; only this module imports it, and the tool server imports this module lazily).

One MCP server serves every trial of a run. The router checks the trial's bearer token before anything
else and hands the bridge that trial's :class:`TrialEndpoint`; it rides to the handlers in the ASGI
scope, so a request reaches only the world of the trial whose token it carries.

- ``tools/list``: the domain's tools (``inputSchema`` is the tool's JSON Schema, ``readOnlyHint`` its
  kind) and ``send_message_to_user`` (``{"text": ...}``, answered with the user's reply), so multi-turn
  cases work.
- ``tools/call`` goes through the same boundary as in-process (permissions → validation → fault → tool
  → record). The SDK's low-level server does not check arguments against the schema, so unknown tools
  and invalid arguments reach the boundary, are recorded, and come back as ``isError`` results.
- A planned ``timeout`` or ``drop_response`` sends nothing: the request hangs until the client gives up
  (closes the request's connection) or the trial ends.

Stateless streamable HTTP with JSON responses: nothing outlives a request, so there is no session to
expire or to clean up when a trial ends (a stateful session would outlive its trial: its closing DELETE
arrives after the router has already refused the trial's URL), no SSE stream per client, and per call
it measured within noise of the stateful modes. Both eras of the protocol are served: the ``initialize`` handshake
(``ClientSession``) and the 2026-07-28 per-request envelope (``mcp.Client`` in its default ``auto``
mode, which the OpenAI Agents SDK uses).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError

from passhat import __version__
from passhat.episode import LimitExceeded
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
from passhat.serve.watch import ClientWatch, NeverGone

USER_TOOL = "send_message_to_user"
"""The tool that talks to the simulated user: over MCP, tools are the agent's only way to reach anyone."""
USER_LEFT = "(the user has left the conversation and will not reply)"
"""What ``send_message_to_user`` answers once the user has gone."""
TRIAL_OVER = "no response: the trial ended while the call was pending"
"""The answer a withheld call finally gets when the trial ends first (the agent is no longer listening)."""

Context = ServerRequestContext[Any, Any]

_ENDPOINT = "passhat.endpoint"
"""ASGI scope key carrying the authorized trial endpoint from the router to the handlers."""


def user_tool() -> types.Tool:
    return types.Tool(
        name=USER_TOOL,
        description="Send a message to the user and wait for their reply: to ask for details you need, to "
                    "confirm, or to report. The result is the user's reply.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string", "description": "Your message to the user."}},
            "required": ["text"],
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
    )


def check_names(domain: str, names: list[str]) -> None:
    """Raise :class:`DomainError` when a domain tool is called ``send_message_to_user``: one of the two
    would silently shadow the other."""
    if USER_TOOL in names:
        raise DomainError(f"domain {domain!r}: tool {USER_TOOL!r}: over MCP this name is the message to the "
                          "simulated user; rename the domain's tool")


def mcp_tools(domain: str, specs: list[dict[str, Any]]) -> list[types.Tool]:
    """The MCP tool list for a trial's tool specs, ``send_message_to_user`` last."""
    check_names(domain, [spec["name"] for spec in specs])
    tools = [
        types.Tool(name=spec["name"], description=spec["description"] or None, input_schema=spec["parameters"],
                   annotations=types.ToolAnnotations(read_only_hint=spec["kind"] == "read"))
        for spec in specs
    ]
    return [*tools, user_tool()]


def text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def call_result(answer: CallAnswer) -> types.CallToolResult:
    """A boundary answer as an MCP tool result: the result as JSON text and, when it is an object, as
    ``structuredContent``; or ``isError`` with ``ERROR: `` and the error the boundary recorded. Both texts
    are what an in-process model agent's ``ToolResult.text()`` gives, so a model reads the same whatever the
    transport — frameworks that drop the ``isError`` flag (the OpenAI Agents SDK does) included."""
    if not answer.ok:
        return text_result(f"ERROR: {answer.error or 'error'}", error=True)
    text = json.dumps(answer.result, ensure_ascii=False, default=str)
    structured = answer.result if isinstance(answer.result, dict) else None
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def _endpoint(ctx: Context) -> TrialEndpoint:
    endpoint = ctx.request.scope.get(_ENDPOINT) if ctx.request is not None else None
    if not isinstance(endpoint, TrialEndpoint):  # only if an SDK release stopped passing the HTTP request on
        raise MCPError(code=types.INTERNAL_ERROR, message="passhat: the request did not come through a trial URL")
    return endpoint


class McpBridge:
    """Serves ``/trials/{id}/mcp`` for :class:`passhat.serve.ToolServer`, which calls
    ``await bridge(endpoint, scope, receive, send)`` once the trial's token has been checked."""

    def __init__(self) -> None:
        self.server: Server[Any] = Server(
            "passhat", version=__version__, on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            # Otherwise the 2026-07-28 entry runs tools/list before every call to check `Mcp-Param-*`
            # headers against the schema; passhat's tools declare no such headers.
            get_tool_input_schema=lambda name: None,
        )
        # No OpenTelemetry span per MCP message: passhat records the trial's spans itself.
        self.server.middleware = []
        self.held = 0
        """Calls whose answer is being withheld right now (planned timeouts and lost responses)."""
        self._manager: StreamableHTTPSessionManager | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

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
        # Read here, under the tool server's cap (BodyTooLarge: the router answers 413), then replayed to the SDK.
        body = await read_body(receive) if scope["method"] == "POST" else b""
        await self._manager.handle_request({**scope, _ENDPOINT: endpoint}, _replay(body, receive), _as_jsonrpc(send))

    async def _list_tools(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        try:
            endpoint = _endpoint(ctx)
            return types.ListToolsResult(tools=mcp_tools(endpoint.episode.domain, endpoint.tool_specs()))
        except DomainError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"passhat: {exc}") from exc

    async def _call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        endpoint = _endpoint(ctx)
        if endpoint.ended.is_set():
            return text_result("the trial is over; no more calls are accepted", error=True)
        if params.name == USER_TOOL:
            return await self._say(endpoint, params.arguments)
        client = _client_watch(ctx)  # a client that gives up, before, during or after the call: the record says so
        try:
            # Shielded: a client that cancels mid-call must not cut a write, or the boundary's record of it, in
            # half (over plain HTTP a client that goes away does not stop the call either).
            with anyio.CancelScope(shield=True):
                answer = await endpoint.call(params.name, params.arguments, client)
            if not answer.withheld:
                return call_result(answer)
            self.held += 1
            try:
                await endpoint.hold(client)
            finally:
                self.held -= 1
            return text_result(TRIAL_OVER, error=True)
        finally:
            client.stop()

    async def _say(self, endpoint: TrialEndpoint, arguments: dict[str, Any] | None) -> types.CallToolResult:
        try:
            check_names(endpoint.episode.domain, [tool.name for tool in endpoint.episode.tools])
        except DomainError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"passhat: {exc}") from exc
        text = (arguments or {}).get("text")
        if not isinstance(text, str) or len(arguments or {}) != 1:
            return text_result(f'invalid arguments: {USER_TOOL} takes {{"text": "<your message>"}}', error=True)
        try:
            reply = await endpoint.say(text)
        except LimitExceeded as exc:
            return text_result(f"ERROR: {exc}", error=True)
        # the text for models; `{"reply": null}` for programs, as over plain HTTP, so "left" is a signal too
        return types.CallToolResult(content=[types.TextContent(text=USER_LEFT if reply is None else reply)],
                                    structured_content={"reply": reply})


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
    return NeverGone() if ctx.request is None else ClientWatch(ctx.request.receive)


__all__ = ["TRIAL_OVER", "USER_LEFT", "USER_TOOL", "McpBridge", "call_result", "check_names", "mcp_tools"]
