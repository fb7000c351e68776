"""An external client that gives up is recorded as giving up, with the moment it did (issue 24).

Real clients against the real tool server: httpx2 with a timeout, raw sockets that close early, and the
official MCP client. A call abandoned before the server got to it used to be recorded ``ok, abandoned:
false``: the trajectory showed a successful read the agent never got.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from passhat.cases import load_suite
from passhat.domain import Domain, load_domain
from passhat.episode import Episode
from passhat.runner.records import TrialRecord
from passhat.runner.trial import run_trial
from passhat.serve import ToolServer
from passhat.tools import ToolContext, tool

NOTES = Path(__file__).parents[1] / "data" / "notes"
CASE_TEXT = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))


@tool(kind="read")
def slow_list(ctx: ToolContext) -> list[dict]:
    """List the notes slowly: the tool blocks (as a CPU-bound or synchronous tool does) for 0.4 s."""
    time.sleep(0.4)
    return [dict(r) for r in ctx.db.execute("SELECT id, title FROM notes WHERE owner = ?", (ctx.identity,))]


def notes(tmp_path: Path, extra: str = "") -> tuple[Any, Domain]:
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    (folder / "c.yaml").write_text(CASE_TEXT + extra)
    base = load_domain(str(NOTES / "domain.py"))
    domain = Domain("notes", schema=base.schema_sql, fixtures=base.fixtures, policy="", tools=[*base.tool_list(), slow_list])
    return load_suite(str(folder)).cases[0], domain


def run(case: Any, domain: Domain, body: Any) -> TrialRecord:
    async def go() -> TrialRecord:
        async with ToolServer() as server:
            async def agent(episode: Episode) -> str | None:
                async with server.trial(episode) as endpoint:
                    return await body(endpoint)

            return await run_trial(case, domain, agent, 0, 1)

    return asyncio.run(go())


def raw_post(url: str, token: str, tool_name: str, body: bytes, *, declared: int | None = None) -> socket.socket:
    """Send a POST of a tool call on a raw socket and return the socket (still open)."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    path = "/" + url.split("//", 1)[1].split("/", 1)[1] + f"/tools/{tool_name}"
    sock = socket.create_connection((host, int(port)))
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {declared or len(body)}\r\n\r\n")
    sock.sendall(head.encode() + body)
    return sock


def test_a_request_closed_before_the_server_got_to_it_is_abandoned_before(tmp_path: Path) -> None:
    case, domain = notes(tmp_path)

    async def body(ep: Any) -> str:
        sock = raw_post(ep.url, ep.token, "list_notes", b"{}")
        sock.close()  # gone at once: nobody will read the answer
        await asyncio.sleep(0.3)
        return "done"

    rec = run(case, domain, body)
    (call,) = rec.calls
    assert (call.tool, call.status, call.abandoned, call.abandoned_when) == ("list_notes", "ok", True, "before")
    assert call.abandoned_at is not None and call.abandoned_at <= call.started_at


def test_a_client_that_times_out_while_the_tool_runs_is_abandoned_during(tmp_path: Path) -> None:
    case, domain = notes(tmp_path, "faults: [{tool: add_note, kind: latency, seconds: 0.5}]\n")

    async def body(ep: Any) -> str:
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {ep.token}"}) as http:
            with pytest.raises(httpx2.ReadTimeout):
                await http.post(f"{ep.url}/tools/add_note", json={"title": "call mom", "priority": 2}, timeout=0.1)
            await asyncio.sleep(0.6)  # the call completes after the client has gone
            await http.post(f"{ep.url}/tools/list_notes", json={})
        return "added"

    rec = run(case, domain, body)
    first, second = rec.calls
    assert (first.status, first.committed, first.abandoned, first.abandoned_when) == ("ok", True, True, "during")
    assert first.started_at < first.abandoned_at < first.started_at + first.duration_ms / 1000  # type: ignore[operator]
    assert (second.abandoned, second.abandoned_when, second.abandoned_at) == (False, None, None)


def test_a_client_gone_when_the_answer_is_ready_is_abandoned_after(tmp_path: Path) -> None:
    """A tool that blocks the server: the client's close is seen only once the tool has answered."""
    case, domain = notes(tmp_path)

    async def body(ep: Any) -> str:
        def client() -> None:
            sock = raw_post(ep.url, ep.token, "slow_list", b"{}")
            time.sleep(0.2)  # while the tool blocks the server
            sock.close()

        thread = threading.Thread(target=client)
        thread.start()
        await asyncio.sleep(0.9)
        thread.join()
        return "done"

    rec = run(case, domain, body)
    (call,) = rec.calls
    assert (call.tool, call.status, call.abandoned, call.abandoned_when) == ("slow_list", "ok", True, "after")
    assert call.abandoned_at >= call.started_at + call.duration_ms / 1000  # type: ignore[operator]


def test_a_request_whose_body_never_arrived_whole_is_no_call(tmp_path: Path) -> None:
    """The client promised 40 bytes, sent 8 and left: there are no arguments to call the tool with (it used
    to run with `{}`)."""
    case, domain = notes(tmp_path)

    async def body(ep: Any) -> str:
        sock = raw_post(ep.url, ep.token, "add_note", b'{"title"', declared=40)
        await asyncio.sleep(0.1)
        sock.close()
        await asyncio.sleep(0.2)
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {ep.token}"}) as http:
            answer = await http.post(f"{ep.url}/tools/list_notes", json={})
        return json.dumps(answer.json())

    rec = run(case, domain, body)
    assert [(c.tool, c.abandoned) for c in rec.calls] == [("list_notes", False)]


def test_an_answered_call_is_not_abandoned(tmp_path: Path) -> None:
    case, domain = notes(tmp_path)

    async def body(ep: Any) -> str:
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {ep.token}"}) as http:
            got = await http.post(f"{ep.url}/tools/list_notes", json={})
        assert got.json()["ok"] is True
        return "done"

    (call,) = run(case, domain, body).calls
    assert (call.abandoned, call.abandoned_when) == (False, None)


def test_an_mcp_client_that_gives_up_mid_call_is_abandoned_during(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'passhat[mcp]'")
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    case, domain = notes(tmp_path, "faults: [{tool: list_notes, kind: latency, seconds: 0.5}]\n")

    async def body(ep: Any) -> str:
        start = ep.start()
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {start.token}"}, verify=False) as http, \
                Client(streamable_http_client(start.mcp_url, http_client=http), cache=None) as client:
            with pytest.raises(MCPError):  # the 2026-07-28 client closes the request when it gives up
                await client.session.call_tool("list_notes", {}, read_timeout_seconds=0.1)
            await asyncio.sleep(0.6)
        return "done"

    (call,) = run(case, domain, body).calls
    assert (call.status, call.abandoned, call.abandoned_when) == ("ok", True, "during")
