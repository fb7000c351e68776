"""passhat's own stateless MCP answers (serve/mcp_stateless.py) against the SDK's, and the official clients
against them: the same status, content type and JSON-RPC body for every request either path can get, from
the handshake era and the 2026-07-28 envelope, errors and version negotiation included; the TypeScript SDK's
client end to end."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import httpx2
import pytest

from passhat.cases import load_suite
from passhat.episode import Episode
from passhat.runner.trial import run_trial
from passhat.serve import ToolServer, TrialEndpoint

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'passhat[mcp]'")
from passhat.serve.mcp import McpBridge  # noqa: E402

SUITE = load_suite("refunds")
CASE = next(c for c in SUITE.cases if c.id == "refund-4812")
NODE_MCP = Path(__file__).parents[2] / "examples" / "agents" / "node_mcp"
TS_SCRIPT = Path(__file__).parents[1] / "data" / "mcp" / "ts_conformance.mjs"

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
JSON_IN = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def handshake(version: str = "2025-11-25") -> dict[str, str]:
    return {**JSON_IN, "mcp-protocol-version": version}


def modern(method: str, name: str | None = None) -> dict[str, str]:
    return {**JSON_IN, "mcp-protocol-version": "2026-07-28", "mcp-method": method, **({"mcp-name": name} if name else {})}


def initialize(version: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def call(name: str, arguments: Any, *, envelope: bool = False, request_id: Any = 3) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if envelope:
        params["_meta"] = ENVELOPE
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


# (what, headers, body, whether the stateless path answers it)
REQUESTS: list[tuple[str, dict[str, str], Any, bool]] = [
    ("initialize, a version both know", JSON_IN, initialize("2025-06-18"), True),
    ("initialize, a version nobody knows", JSON_IN, initialize("1999-01-01"), True),
    ("initialize, the envelope era's version", JSON_IN, initialize("2026-07-28"), True),
    ("initialize without parameters", JSON_IN, {"jsonrpc": "2.0", "id": 1, "method": "initialize"}, False),
    ("ping", handshake(), {"jsonrpc": "2.0", "id": "p", "method": "ping"}, True),
    ("tools/list", handshake(), {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, True),
    ("tools/list with a cursor", handshake(), {"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                                                "params": {"cursor": "abc"}}, True),
    ("tools/list without a version header", JSON_IN, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, True),
    ("tools/list, accept */*", {**handshake(), "accept": "*/*"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, True),
    ("a call", handshake(), call("get_order", {"order_id": 4812}), True),
    ("a call without arguments", handshake(), {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                                 "params": {"name": "get_customer"}}, True),
    ("an unknown tool", handshake(), call("no_such_tool", {}), True),
    ("invalid arguments", handshake(), call("get_order", {"order_id": "x"}), True),
    ("the user tool, wrong arguments", handshake(), call("send_message_to_user", {"x": 1}), True),
    ("a notification", handshake(), {"jsonrpc": "2.0", "method": "notifications/initialized"}, True),
    ("a cancellation", handshake(), {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                      "params": {"requestId": 3}}, True),
    ("a call without a name", handshake(), {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                                            "params": {"arguments": {}}}, False),
    ("arguments not an object", handshake(), call("get_order", [1]), False),
    ("a method not served", handshake(), {"jsonrpc": "2.0", "id": 7, "method": "resources/list"}, False),
    ("an unknown method", handshake(), {"jsonrpc": "2.0", "id": 7, "method": "foo/bar"}, False),
    ("a null id", handshake(), {"jsonrpc": "2.0", "id": None, "method": "tools/list"}, False),
    ("no jsonrpc member", handshake(), {"id": 2, "method": "tools/list"}, False),
    ("a batch", handshake(), [{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}], False),
    ("not JSON", handshake(), b"{nope", False),
    ("a version header nobody knows", handshake("1999-01-01"), {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, False),
    ("Accept without JSON", {**handshake(), "accept": "text/event-stream"}, {"jsonrpc": "2.0", "id": 2,
                                                                           "method": "tools/list"}, False),
    ("a Content-Type that is not JSON", {**handshake(), "content-type": "text/plain"}, {"jsonrpc": "2.0", "id": 2,
                                                                                      "method": "tools/list"}, False),
    ("envelope: server/discover", modern("server/discover"), {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                                              "params": {"_meta": ENVELOPE}}, True),
    ("envelope: tools/list", modern("tools/list"), {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                                    "params": {"_meta": ENVELOPE}}, True),
    ("envelope: a call", modern("tools/call", "get_customer"), call("get_customer", {}, envelope=True), True),
    ("envelope: an unknown tool", modern("tools/call", "nope"), call("nope", {}, envelope=True), True),
    ("envelope: the name header disagrees", modern("tools/call", "other"), call("get_customer", {}, envelope=True), False),
    ("envelope: no _meta", modern("tools/list"), {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, False),
    ("envelope: a version nobody knows", {**modern("tools/list"), "mcp-protocol-version": "2027-01-01"},
     {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
      "params": {"_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2027-01-01"}}}, False),
    ("envelope: ping (not served in this era)", modern("ping"), {"jsonrpc": "2.0", "id": 1, "method": "ping",
                                                                  "params": {"_meta": ENVELOPE}}, False),
    ("envelope: initialize (not in this era)", modern("initialize"), {**initialize("2025-11-25"),
                                                                       "params": {**initialize("2025-11-25")["params"],
                                                                                  "_meta": ENVELOPE}}, False),
    ("envelope: a notification", modern("notifications/initialized"),
     {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"_meta": ENVELOPE}}, False),
]


def answer(raw: httpx2.Response) -> tuple[int, str, Any]:
    """Status, content type and the parsed body (``None`` when empty): what a client acts on."""
    kind = raw.headers.get("content-type", "").split(";")[0]
    return raw.status_code, kind, json.loads(raw.content) if raw.content else None


def test_the_stateless_path_answers_as_the_sdk_does() -> None:
    async def main() -> None:
        async with ToolServer() as fast, ToolServer() as reference:
            assert isinstance(reference.router.mcp, McpBridge)
            reference.router.mcp.stateless = None  # the SDK answers everything there

            async def agent(episode: Episode) -> str:
                async with fast.trial(episode) as ours, reference.trial(episode) as theirs:
                    await compare(ours, theirs)
                return "done"

            await run_trial(CASE, SUITE.domain_of(CASE), agent, 0, 1)
            bridge = fast.router.mcp
            assert isinstance(bridge, McpBridge) and bridge.stateless is not None
            assert bridge.stateless.answered == sum(ours for *_, ours in REQUESTS)

    async def compare(ours: TrialEndpoint, theirs: TrialEndpoint) -> None:
        async with httpx2.AsyncClient(timeout=10) as http:
            for what, headers, body, _ in REQUESTS:
                content = body if isinstance(body, bytes) else json.dumps(body).encode()
                got = [answer(await http.post(f"{e.url}/mcp", content=content,
                                              headers={**headers, "authorization": f"Bearer {e.token}"}))
                       for e in (theirs, ours)]
                assert got[1] == got[0], what

    asyncio.run(main())


def test_a_get_on_the_mcp_url_is_405_not_a_stream_that_stays_open() -> None:
    """A stateless server sends nothing first: no event stream (the SDK's was a silent one that held a connection
    and a task until the client went away; the TypeScript client opens one after initialize)."""
    async def main() -> tuple[int, str, Any, str]:
        async with ToolServer() as server:
            got: list[Any] = []

            async def agent(episode: Episode) -> str:
                async with server.trial(episode) as endpoint, httpx2.AsyncClient(timeout=10) as http:
                    raw = await http.get(f"{endpoint.url}/mcp", headers={"accept": "text/event-stream",
                                                                          "authorization": f"Bearer {endpoint.token}"})
                    got.extend([*answer(raw), raw.headers.get("allow")])
                return "done"

            await run_trial(CASE, SUITE.domain_of(CASE), agent, 0, 1)
            return got[0], got[1], got[2], got[3]

    status, kind, body, allow = asyncio.run(main())
    assert (status, kind, allow) == (405, "application/json", "POST")
    assert body["error"]["code"] == -32600 and "no event stream" in body["error"]["message"]


def test_the_typescript_sdk_client_initializes_lists_and_calls() -> None:
    if not (NODE_MCP / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir() or shutil.which("node") is None:
        message = "the TypeScript MCP SDK (bash examples/agents/install-recipes.sh) and node are needed"
        if os.environ.get("PASSHAT_REQUIRE_RECIPES") == "1":
            pytest.fail(message + "; PASSHAT_REQUIRE_RECIPES=1 says they must be there")
        pytest.skip(message)

    async def main(folder: Path) -> tuple[dict[str, Any], Any]:
        async with ToolServer() as server:
            seen: list[dict[str, Any]] = []

            async def agent(episode: Episode) -> str:
                async with server.trial(episode) as endpoint:
                    start = endpoint.start()
                    env = {**os.environ, "MCP_URL": start.mcp_url or "", "MCP_TOKEN": start.token}
                    node = await asyncio.create_subprocess_exec(
                        "node", str(folder / "conformance.mjs"), env=env, stdout=asyncio.subprocess.PIPE,
                        stderr=asyncio.subprocess.PIPE)
                    out, err = await asyncio.wait_for(node.communicate(), 60)
                    assert node.returncode == 0, err.decode()
                    seen.append(json.loads(out.decode().strip().splitlines()[-1]))
                return "done"

            record = await run_trial(CASE, SUITE.domain_of(CASE), agent, 0, 1)
            bridge = server.router.mcp
            assert isinstance(bridge, McpBridge) and bridge.stateless is not None and bridge.stateless.answered >= 6
            return seen[0], record

    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"passhat-ts-conformance-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    try:
        shutil.copy(TS_SCRIPT, folder / "conformance.mjs")
        if not (folder / "node_modules").exists():
            (folder / "node_modules").symlink_to(NODE_MCP / "node_modules")
        seen, record = asyncio.run(main(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert seen["protocolVersion"] == "2025-11-25"  # the client's latest, which the server speaks
    assert seen["server"]["name"] == "passhat" and seen["capabilities"] == {"tools": {"listChanged": False}}
    assert "get_order" in seen["tools"] and seen["tools"][-1] == "send_message_to_user"
    assert seen["order"]["isError"] is False and seen["order"]["structured"]["id"] == 4812
    assert seen["unknown"]["isError"] is True and seen["unknown"]["text"].startswith("ERROR: unknown tool 'no_such_tool'")
    assert seen["invalid"]["isError"] is True and seen["invalid"]["text"].startswith("ERROR: invalid arguments: order_id")
    assert seen["transportErrors"] == []  # the GET for an event stream met 405, which the client takes as "none"
    assert [(c.tool, c.status) for c in record.calls] == [
        ("get_order", "ok"), ("no_such_tool", "unknown_tool"), ("get_order", "invalid_arguments")]
