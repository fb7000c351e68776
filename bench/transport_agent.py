"""The agent side of bench_transport.py: an HTTP agent service in its own process.

``POST /http`` does the benchmark's six tool calls over the plain JSON tool API (``/local``: with passhat's own
small client instead of httpx2), ``POST /mcp`` over MCP
(official client), each against the trial's URLs from the start message, and answers ``{"reply"}``.
Run by the benchmark as ``python bench/transport_agent.py PORT``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx2
import uvicorn

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_order", {"order_id": 4812}), ("get_customer", {}), ("list_refunds", {"order_id": 4812}),
    ("get_approval", {"order_id": 4812}),
    ("issue_refund", {"order_id": 4812, "amount": 118.5, "method": "original_payment"}),
    ("send_email", {"order_id": 4812, "template": "refund", "body": "Your refund of 118.50 is on its way."}),
]
http = httpx2.AsyncClient(verify=False)  # plain HTTP on 127.0.0.1; skips loading the CA bundle


def mcp_client(token: str) -> httpx2.AsyncClient:
    """An MCP session needs its own client (it closes it); without verify=False each costs ~30 ms of CPU."""
    return httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, verify=False)


async def over_http(start: dict[str, Any]) -> None:
    headers = {"authorization": f"Bearer {start['token']}"}
    (await http.get(start["tools_url"], headers=headers)).raise_for_status()
    for name, args in CALLS:
        (await http.post(f"{start['tools_url']}/{name}", json=args, headers=headers)).raise_for_status()


async def over_mcp(start: dict[str, Any]) -> None:
    """The ``initialize`` handshake (``ClientSession``), as most MCP clients today."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with mcp_client(start["token"]) as client, \
            streamable_http_client(start["mcp_url"], http_client=client) as streams, \
            ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        await session.list_tools()
        for name, args in CALLS:
            await session.call_tool(name, args)


async def over_mcp_2026(start: dict[str, Any]) -> None:
    """``mcp.Client`` in its default mode (the 2026-07-28 per-request envelope), as the OpenAI Agents SDK."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with mcp_client(start["token"]) as client, \
            Client(streamable_http_client(start["mcp_url"], http_client=client), cache=None) as connected:
        await connected.session.list_tools()
        for name, args in CALLS:
            await connected.session.call_tool(name, args)


async def over_small_client(start: dict[str, Any]) -> None:
    """The same calls with passhat's small plain-HTTP client (``passhat.localhttp``: what RemoteEpisode uses)."""
    from passhat.localhttp import shared_client

    client = await shared_client()
    headers = {"authorization": f"Bearer {start['token']}"}
    (await client.request("GET", start["tools_url"], headers=headers)).json()
    for name, args in CALLS:
        answer = await client.request("POST", f"{start['tools_url']}/{name}", json_body=args, headers=headers)
        assert answer.status == 200, answer.body


async def nothing(start: dict[str, Any]) -> None:
    """No tool calls: what starting an external trial costs by itself."""


MODES = {"/http": over_http, "/local": over_small_client, "/mcp": over_mcp, "/mcp-2026": over_mcp_2026, "/nothing": nothing}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["method"] == "POST":  # a GET is the benchmark asking whether the service is up
        start = json.loads(body)
        await MODES[scope["path"]](start)
    raw = b'{"reply": "done"}'
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]})
    await send({"type": "http.response.body", "body": raw})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
