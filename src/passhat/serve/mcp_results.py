"""What a trial answers over MCP, as the JSON the wire carries: the tool list and each call's result.

Both MCP paths of the tool server build their answers here (:mod:`passhat.serve.mcp_stateless`, passhat's
own JSON-RPC answers, and the SDK's server in :mod:`passhat.serve.mcp`, which validates these into its
types), so the two cannot drift apart. Nothing here imports the ``mcp`` SDK.

- ``tools/list``: the domain's tools (``inputSchema`` is the tool's JSON Schema, ``readOnlyHint`` its
  kind) and ``send_message_to_user`` (``{"text": ...}``, answered with the user's reply), so multi-turn
  cases work.
- ``tools/call`` goes through the same boundary as in-process (permissions → validation → fault → tool
  → record): unknown tools and invalid arguments reach the boundary, are recorded, and come back as
  ``isError`` results whose text starts with ``ERROR: ``.
- A planned ``timeout`` or ``drop_response`` sends nothing: the request hangs until the client gives up
  (closes the request's connection) or the trial ends.
"""

from __future__ import annotations

import json
from typing import Any

from passhat.episode import LimitExceeded
from passhat.errors import DomainError
from passhat.serve.endpoint import CallAnswer, TrialEndpoint
from passhat.serve.watch import ClientWatch

USER_TOOL = "send_message_to_user"
"""The tool that talks to the simulated user: over MCP, tools are the agent's only way to reach anyone."""
USER_LEFT = "(the user has left the conversation and will not reply)"
"""What ``send_message_to_user`` answers once the user has gone."""
TRIAL_OVER = "no response: the trial ended while the call was pending"
"""The answer a withheld call finally gets when the trial ends first (the agent is no longer listening)."""
TRIAL_ENDED = "the trial is over; no more calls are accepted"
"""The answer to a call made after the trial ended (on a connection opened before)."""

USER_TOOL_ENTRY: dict[str, Any] = {
    "name": USER_TOOL,
    "description": "Send a message to the user and wait for their reply: to ask for details you need, to "
                   "confirm, or to report. The result is the user's reply.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "Your message to the user."}},
        "required": ["text"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": False, "destructiveHint": False},
}


class McpDomainError(Exception):
    """The domain cannot be served over MCP as it is (a JSON-RPC internal error, naming the domain)."""


def check_names(domain: str, names: list[str]) -> None:
    """Raise :class:`DomainError` when a domain tool is called ``send_message_to_user``: one of the two
    would silently shadow the other."""
    if USER_TOOL in names:
        raise DomainError(f"domain {domain!r}: tool {USER_TOOL!r}: over MCP this name is the message to the "
                          "simulated user; rename the domain's tool")


def tool_entries(domain: str, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``tools/list`` entries for a trial's tool specs, ``send_message_to_user`` last."""
    check_names(domain, [spec["name"] for spec in specs])
    tools = []
    for spec in specs:
        entry: dict[str, Any] = {"name": spec["name"], "inputSchema": spec["parameters"],
                                 "annotations": {"readOnlyHint": spec["kind"] == "read"}}
        if spec["description"]:
            entry["description"] = spec["description"]
        tools.append(entry)
    return [*tools, USER_TOOL_ENTRY]


def text_result(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def call_result(answer: CallAnswer) -> dict[str, Any]:
    """A boundary answer as an MCP tool result: the result as JSON text and, when it is an object, as
    ``structuredContent``; or ``isError`` with ``ERROR: `` and the error the boundary recorded. Both texts
    are what an in-process model agent's ``ToolResult.text()`` gives, so a model reads the same whatever the
    transport — frameworks that drop the ``isError`` flag (the OpenAI Agents SDK does) included."""
    if not answer.ok:
        return text_result(f"ERROR: {answer.error or 'error'}", error=True)
    result = text_result(json.dumps(answer.result, ensure_ascii=False, default=str))
    if isinstance(answer.result, dict):
        result["structuredContent"] = answer.result
    return result


class ToolCalls:
    """Runs ``tools/call`` for a trial, whichever path the request came by; counts the answers withheld."""

    def __init__(self) -> None:
        self.held = 0
        """Calls whose answer is being withheld right now (planned timeouts and lost responses)."""

    async def call(self, endpoint: TrialEndpoint, name: str, arguments: dict[str, Any] | None,
                   client: ClientWatch) -> dict[str, Any]:
        """The result of calling ``name``; raises :class:`McpDomainError` for a domain that shadows the user
        tool. ``client`` watches the request's connection: a client that gives up, before, during or after
        the call, is recorded so. The call itself is never cut short by the client going away (over plain
        HTTP it is not either), so a write and its record are whole."""
        if endpoint.ended.is_set():
            return text_result(TRIAL_ENDED, error=True)
        if name == USER_TOOL:
            return await self._say(endpoint, arguments)
        answer = await self.run(endpoint, name, arguments, client)
        if not answer.withheld:
            return call_result(answer)
        self.held += 1
        try:
            await endpoint.hold(client)
        finally:
            self.held -= 1
        return text_result(TRIAL_OVER, error=True)

    async def run(self, endpoint: TrialEndpoint, name: str, arguments: dict[str, Any] | None,
                  client: ClientWatch) -> CallAnswer:
        """The boundary's answer (a path whose handlers can be cancelled mid-call shields this)."""
        return await endpoint.call(name, arguments, client)

    async def _say(self, endpoint: TrialEndpoint, arguments: dict[str, Any] | None) -> dict[str, Any]:
        try:
            check_names(endpoint.episode.domain, [tool.name for tool in endpoint.episode.tools])
        except DomainError as exc:
            raise McpDomainError(f"passhat: {exc}") from exc
        text = (arguments or {}).get("text")
        if not isinstance(text, str) or len(arguments or {}) != 1:
            return text_result(f'invalid arguments: {USER_TOOL} takes {{"text": "<your message>"}}', error=True)
        try:
            reply = await endpoint.say(text)
        except LimitExceeded as exc:
            return text_result(f"ERROR: {exc}", error=True)
        # the text for models; `{"reply": null}` for programs, as over plain HTTP, so "left" is a signal too
        result = text_result(USER_LEFT if reply is None else reply)
        result["structuredContent"] = {"reply": reply}
        return result


__all__ = ["TRIAL_ENDED", "TRIAL_OVER", "USER_LEFT", "USER_TOOL", "McpDomainError", "ToolCalls", "call_result",
           "check_names", "text_result", "tool_entries"]
