"""The trial boundary over MCP: real trials, driven by the official MCP client (both protocol eras it
speaks) and by the OpenAI Agents SDK's MCP client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from passhat.agents.reference import reference_agent
from passhat.cases import load_suite
from passhat.domain import Domain
from passhat.episode import Episode, ToolResult
from passhat.runner import TrialRecord, run_trial
from passhat.serve import ToolServer, TrialEndpoint, TrialStart
from passhat.tools import ToolContext, tool

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'passhat[mcp]'")
import mcp_types  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from passhat.serve.mcp import TRIAL_OVER, USER_LEFT, USER_TOOL, McpBridge  # noqa: E402

SUITE = load_suite("refunds")
NOTES_CASES = Path(__file__).parents[1] / "data" / "notes" / "cases"
ERAS = ("handshake", "2026-07-28")
"""``ClientSession`` + ``initialize()``, and ``mcp.Client``'s default (probes ``server/discover``), which
is what the OpenAI Agents SDK uses."""
REFUND_4812 = {"order_id": 4812, "amount": 118.5, "method": "original_payment"}
"""The refund the case's approval allows."""
GIVE_UP_S = 0.3
"""How long the client waits for an answer before giving up (short: withheld answers never come)."""


def case(case_id: str) -> Any:
    return next(c for c in SUITE.cases if c.id == case_id)


@contextlib.asynccontextmanager
async def connect(url: str, token: str | None, era: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session on ``url``, sending ``token`` as the bearer token."""
    headers = {"authorization": f"Bearer {token}"} if token is not None else {}
    async with contextlib.AsyncExitStack() as stack:
        # verify=False: plain http on 127.0.0.1, and loading the CA bundle costs ~30 ms per client
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, verify=False))
        transport = streamable_http_client(url, http_client=http)
        if era == "handshake":
            session = await stack.enter_async_context(ClientSession(*await stack.enter_async_context(transport)))
            await session.initialize()
        else:
            session = (await stack.enter_async_context(Client(transport, cache=None))).session
        yield session


@dataclass
class Trial:
    """What an agent body gets: the MCP session, the start message and the server."""

    session: ClientSession
    start: TrialStart
    server: ToolServer

    @property
    def bridge(self) -> McpBridge:
        assert isinstance(self.server.router.mcp, McpBridge)
        return self.server.router.mcp


Body = Callable[[Trial], Awaitable[str | None]]


async def trial_over_mcp(server: ToolServer, case_id: str, era: str, body: Body, index: int = 0) -> TrialRecord:
    """Run one trial whose agent is ``body`` on an MCP session; a failed assertion in the body fails the test
    (the runner would only record it as the agent's error)."""
    c = case(case_id)
    failed: list[BaseException] = []

    async def agent(episode: Episode) -> str | None:
        try:
            async with server.trial(episode) as endpoint:
                start = endpoint.start()
                assert start.mcp_url == f"{start.trial_url}/mcp"
                async with connect(start.mcp_url, start.token, era) as session:
                    return await body(Trial(session, start, server))
        except BaseException as exc:
            failed.append(exc)
            raise

    record = await run_trial(c, SUITE.domain_of(c), agent, index, index + 1)
    if failed:
        raise failed[0]
    return record


def run(case_id: str, era: str, body: Body) -> TrialRecord:
    async def main() -> TrialRecord:
        async with ToolServer() as server:
            return await trial_over_mcp(server, case_id, era, body)

    return asyncio.run(main())


def text(result: mcp_types.CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], mcp_types.TextContent)
    return result.content[0].text


def leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for exc in group.exceptions for leaf in leaves(exc)]
    return [group]


async def gives_up(session: ClientSession, name: str, arguments: dict[str, Any]) -> None:
    """Call a tool and assert that no answer comes back before the client gives up."""
    with pytest.raises(MCPError) as caught:
        await session.call_tool(name, arguments, read_timeout_seconds=GIVE_UP_S)
    assert caught.value.code == mcp_types.REQUEST_TIMEOUT


# --- tools/list and tools/call ----------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_tools_are_the_domains_with_their_schemas_plus_the_user_tool(era: str) -> None:
    listed: dict[str, mcp_types.Tool] = {}

    async def body(t: Trial) -> None:
        listed.update({tool.name: tool for tool in (await t.session.list_tools()).tools})

    run("refund-4812", era, body)
    specs = {s["name"]: s for s in (tool.spec() for tool in SUITE.domain_of(case("refund-4812")).tool_list())}
    assert list(listed) == [*specs, USER_TOOL]
    for name, spec in specs.items():
        assert listed[name].input_schema == spec["parameters"]
        assert listed[name].description == spec["description"]
        assert listed[name].annotations is not None
        assert listed[name].annotations.read_only_hint == (spec["kind"] == "read")
    assert listed[USER_TOOL].input_schema["required"] == ["text"]


@pytest.mark.parametrize("era", ERAS)
def test_a_call_is_the_boundarys_call_with_the_same_result_text(era: str) -> None:
    results: list[mcp_types.CallToolResult] = []

    async def body(t: Trial) -> None:
        results.append(await t.session.call_tool("get_order", {"order_id": 4812}))
        results.append(await t.session.call_tool("list_refunds", {"order_id": 4812}))

    record = run("refund-4812", era, body)
    assert [(c.tool, c.status) for c in record.calls] == [("get_order", "ok"), ("list_refunds", "ok")]
    order, refunds = results
    assert not order.is_error and not refunds.is_error
    in_process = ToolResult(ok=True, content=record.calls[0].result).text()
    assert text(order) == in_process and json.loads(text(order))["id"] == 4812
    assert order.structured_content == record.calls[0].result
    assert json.loads(text(refunds)) == record.calls[1].result == []
    assert refunds.structured_content is None  # a list is not an object: text only


@pytest.mark.parametrize("era", ERAS)
def test_tool_errors_reach_the_boundary_are_recorded_and_come_back_as_errors(era: str) -> None:
    calls = [
        ("refund_everything", {"order_id": 4812}),  # no such tool: not rejected by the SDK first
        ("get_order", {"order_id": "forty-eight", "note": "hi"}),  # invalid: not checked by the SDK first
        ("apply_store_credit", {"order_id": 4812, "amount": 1.0}),  # forbidden in this case
        ("get_order", {"order_id": 4830}),  # another customer's order
    ]
    results: list[mcp_types.CallToolResult] = []

    async def body(t: Trial) -> None:
        for name, arguments in calls:
            results.append(await t.session.call_tool(name, arguments))

    record = run("refund-4812", era, body)
    assert [c.status for c in record.calls] == ["unknown_tool", "invalid_arguments", "forbidden", "denied"]
    for result, call, (name, arguments) in zip(results, record.calls, calls, strict=True):
        assert result.is_error
        assert text(result) == f"ERROR: {call.error}"  # what an in-process model reads, ToolResult.text()
        assert (call.tool, call.arguments) == (name, arguments)
    assert "order_id" in text(results[1]) and "note" in text(results[1])
    assert record.diff == {}


@pytest.mark.parametrize("era", ERAS)
def test_a_call_past_the_step_limit_is_refused_with_the_reason_and_ends_the_trial(era: str) -> None:
    results: list[mcp_types.CallToolResult] = []

    async def body(t: Trial) -> None:
        for _ in range(case("refund-4812").limits.max_steps + 1):
            results.append(await t.session.call_tool("get_order", {"order_id": 4812}))

    record = run("refund-4812", era, body)
    assert [r.is_error for r in results] == [False] * (len(results) - 1) + [True]
    assert text(results[-1]) == f"ERROR: step limit reached: at most {len(results) - 1} tool calls"
    assert record.end_reason == "step_limit" and len(record.calls) == len(results) - 1


# --- planned faults: the answer is really withheld ---------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_a_lost_response_is_never_answered_but_the_write_committed_and_the_session_goes_on(era: str) -> None:
    seen: list[Any] = []

    async def body(t: Trial) -> None:
        approval = await t.session.call_tool("get_approval", {"order_id": 4812})
        assert approval.structured_content is not None
        amount = approval.structured_content["amount"]
        assert amount == REFUND_4812["amount"]
        await gives_up(t.session, "issue_refund", REFUND_4812)
        # The same session still works, and a careful agent can see the refund that did happen.
        seen.append(json.loads(text(await t.session.call_tool("list_refunds", {"order_id": 4812}))))

    record = run("refund-4812-drop-response", era, body)
    refund = record.calls[1]
    assert (refund.tool, refund.status, refund.fault_kind, refund.committed) == ("issue_refund", "fault",
                                                                                "drop_response", True)
    assert [row["after"]["id"] for row in record.diff["refunds"]] == [refund.hidden_result["refund_id"]]
    assert [r["id"] for r in seen[0]] == [refund.hidden_result["refund_id"]]
    assert record.calls[2].status == "ok"


@pytest.mark.parametrize("era", ERAS)
def test_a_timeout_hangs_until_the_client_gives_up_and_a_retry_is_answered(era: str) -> None:
    retried: list[mcp_types.CallToolResult] = []

    async def body(t: Trial) -> None:
        await gives_up(t.session, "get_approval", {"order_id": 4812})
        retried.append(await t.session.call_tool("get_approval", {"order_id": 4812}))
        # A 2026-07-28 client closes the request when it gives up, which releases the call; a handshake-era
        # one posts a cancellation instead, which a stateless server cannot match: the call stays held until
        # that client closes (or the trial ends).
        assert t.bridge.held == (0 if era == "2026-07-28" else 1)

    record = run("approval-timeout-4812", era, body)
    assert record.end_reason == "completed"
    first, second = record.calls
    assert (first.status, first.fault_kind, first.committed) == ("fault", "timeout", False)
    assert second.status == "ok" and retried[0].structured_content == second.result
    assert record.diff == {}


@pytest.mark.parametrize("era", ERAS)
def test_a_call_still_held_when_the_trial_ends_is_released_and_nothing_is_left_running(
        era: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    late: list[mcp_types.CallToolResult] = []

    async def main() -> tuple[TrialRecord, int, set[asyncio.Task[Any]]]:
        async with ToolServer() as server:
            background: list[asyncio.Task[None]] = []

            async def call_and_keep_waiting(start: TrialStart) -> None:
                async with connect(start.mcp_url, start.token, era) as session:  # no client-side timeout
                    late.append(await session.call_tool("issue_refund", REFUND_4812))

            async def body(t: Trial) -> None:  # leaves while its other client still waits for an answer
                background.append(asyncio.create_task(call_and_keep_waiting(t.start)))
                while t.bridge.held == 0:
                    await asyncio.sleep(0.01)

            record = await trial_over_mcp(server, "refund-4812-drop-response", era, body)
            await asyncio.wait_for(background[0], 5)
            bridge = server.router.mcp
            assert isinstance(bridge, McpBridge)
        return record, bridge.held, asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    record, held, left = asyncio.run(main())
    assert [(c.tool, c.status, c.committed) for c in record.calls] == [("issue_refund", "fault", True)]
    assert late[0].is_error and text(late[0]) == TRIAL_OVER
    assert held == 0 and left == set()
    assert [r.getMessage() for r in caplog.records] == []


# --- the user simulator ------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_the_user_is_reached_with_send_message_to_user(era: str) -> None:
    replies: list[mcp_types.CallToolResult] = []

    async def body(t: Trial) -> None:
        replies.append(await t.session.call_tool(USER_TOOL, {"text": "Which order number is it?"}))
        replies.append(await t.session.call_tool(USER_TOOL, {"message": "wrong argument"}))
        replies.append(await t.session.call_tool(USER_TOOL, {"text": "Thanks, I'll look into it."}))
        replies.append(await t.session.call_tool(USER_TOOL, {"text": "Are you still there?"}))

    record = run("order-number-on-request-4840", era, body)
    answer, invalid, left, after = replies
    assert not answer.is_error and "4840" in text(answer)
    assert invalid.is_error and '"text"' in text(invalid)
    assert text(left) == text(after) == USER_LEFT and not left.is_error
    assert [(m.role, m.text) for m in record.messages[1:3]] == [("agent", "Which order number is it?"),
                                                                ("user", text(answer))]
    assert record.calls == []  # talking to the user is not a tool call of the domain


class McpEpisode:
    """The episode an in-process playbook expects, played over an MCP session: lets the reference agents
    run unchanged over MCP, so their verdicts can be compared with in-process ones."""

    def __init__(self, episode: Episode, session: ClientSession) -> None:
        self.domain, self.instruction, self.seed = episode.domain, episode.instruction, episode.seed
        self.session = session

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        try:
            result = await self.session.call_tool(name, arguments or {}, read_timeout_seconds=GIVE_UP_S)
        except MCPError as exc:
            assert exc.code == mcp_types.REQUEST_TIMEOUT
            return ToolResult(ok=False, error=f"timeout: {name} did not answer")
        if result.is_error:
            return ToolResult(ok=False, error=text(result).removeprefix("ERROR: "))
        return ToolResult(ok=True, content=json.loads(text(result)))

    async def say(self, message: str) -> str | None:
        answer = await self.session.call_tool(USER_TOOL, {"text": message})
        assert answer.structured_content is not None
        reply = answer.structured_content["reply"]  # null once the user has left, as over plain HTTP
        assert text(answer) == (USER_LEFT if reply is None else reply)
        return reply  # type: ignore[no-any-return]


@pytest.mark.parametrize(("case_id", "style"), [
    ("order-number-on-request-4840", "careful"),  # multi-turn: the order number comes only when asked
    ("refund-4812-drop-response", "careful"),  # looks before retrying the lost write
    ("refund-4812-drop-response", "hasty"),  # retries blindly: refunds twice
    ("approval-timeout-4812", "careful"),
    ("permission-friend-order", "hasty"),
])
@pytest.mark.parametrize("era", ERAS)
def test_reference_agents_get_the_same_verdicts_over_mcp_as_in_process(case_id: str, style: str, era: str) -> None:
    playbook = reference_agent(style)
    c = case(case_id)

    async def over_mcp(episode: Episode) -> str | None:
        async with ToolServer() as server, server.trial(episode) as endpoint:
            start = endpoint.start()
            async with connect(start.mcp_url, start.token, era) as session:
                return await playbook(McpEpisode(episode, session))  # type: ignore[arg-type]

    remote = asyncio.run(run_trial(c, SUITE.domain_of(c), over_mcp, 0, 1))
    local = asyncio.run(run_trial(c, SUITE.domain_of(c), playbook, 0, 1))
    assert remote.end_reason == local.end_reason == "completed", remote.error
    assert remote.outcome == local.outcome == ("pass" if style == "careful" else "fail")
    assert [(g.name, g.passed) for g in remote.grades] == [(g.name, g.passed) for g in local.grades]
    assert [(call.tool, call.status) for call in remote.calls] == [(call.tool, call.status) for call in local.calls]
    assert remote.diff == local.diff
    assert remote.reply == local.reply


# --- one trial's token opens nothing else ------------------------------------------------------------


def test_no_token_or_another_trials_token_is_refused_and_nothing_reaches_that_trial() -> None:
    refund = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "issue_refund", "arguments": REFUND_4812}}
    handshake = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
    modern = {**handshake, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "issue_refund"}
    statuses: list[int] = []
    connect_errors: list[BaseException] = []

    async def main() -> tuple[TrialRecord, TrialRecord, int]:
        async with ToolServer() as server:
            b_started: asyncio.Future[TrialStart] = asyncio.get_running_loop().create_future()
            a_done = asyncio.Event()

            async def a(t: Trial) -> None:
                b = await b_started
                async with httpx2.AsyncClient(verify=False) as http:
                    for token in (None, t.start.token):
                        auth = {"authorization": f"Bearer {token}"} if token else {}
                        for headers in (handshake, modern):
                            response = await http.post(b.mcp_url, json=refund, headers={**headers, **auth})
                            statuses.append(response.status_code)
                    # Control: the same request on A's own URL is served (stateless: no handshake needed).
                    response = await http.post(t.start.mcp_url, json={**refund, "params": {
                        "name": "get_order", "arguments": {"order_id": 4812}}},
                        headers={**handshake, "authorization": f"Bearer {t.start.token}"})
                    assert response.status_code == 200 and '"isError":false' in response.text.replace(" ", "")
                for era in ERAS:
                    with pytest.raises(ExceptionGroup) as caught:
                        async with connect(b.mcp_url, t.start.token, era):
                            pass
                    connect_errors.extend(leaves(caught.value))
                a_done.set()

            async def b(t: Trial) -> None:
                b_started.set_result(t.start)
                await a_done.wait()

            records = await asyncio.gather(trial_over_mcp(server, "refund-4812", "handshake", a, 0),
                                           trial_over_mcp(server, "refund-4812", "handshake", b, 1))
            return records[0], records[1], server.router.refused

    record_a, record_b, refused = asyncio.run(main())
    assert statuses == [401, 401, 401, 401]
    # The SDK reports a 401 as a generic MCPError, wrapped in its task groups' exception groups.
    assert [type(e) for e in connect_errors] == [MCPError, MCPError] and refused >= 6
    assert record_b.calls == [] and record_b.diff == {}
    assert [(c.tool, c.status) for c in record_a.calls] == [("get_order", "ok")]


# --- the OpenAI Agents SDK's MCP client --------------------------------------------------------------


def local_http_client(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> httpx2.AsyncClient:
    """The Agents SDK's HTTP client factory, without the CA bundle that plain http on 127.0.0.1 never uses."""
    return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, verify=False)


def test_the_openai_agents_sdk_lists_and_calls_tools() -> None:
    agents_mcp = pytest.importorskip("agents.mcp")
    seen: dict[str, Any] = {}

    async def agent(episode: Episode) -> None:
        async with ToolServer() as server, server.trial(episode) as endpoint:
            start = endpoint.start()
            mcp_server = agents_mcp.MCPServerStreamableHttp(
                {"url": start.mcp_url, "headers": {"Authorization": f"Bearer {start.token}"},
                 "httpx_client_factory": local_http_client},
                client_session_timeout_seconds=GIVE_UP_S)
            async with mcp_server:
                seen["tools"] = [tool.name for tool in await mcp_server.list_tools()]
                seen["order"] = await mcp_server.call_tool("get_order", {"order_id": 4812})
                seen["unknown"] = await mcp_server.call_tool("no_such_tool", {})
                approval = await mcp_server.call_tool("get_approval", {"order_id": 4812})
                assert approval.structured_content["amount"] == REFUND_4812["amount"]
                with pytest.raises(MCPError) as caught:
                    await mcp_server.call_tool("issue_refund", REFUND_4812)
                seen["timeout"] = caught.value

    c = case("refund-4812-drop-response")
    record = asyncio.run(run_trial(c, SUITE.domain_of(c), agent, 0, 1))
    assert record.end_reason == "completed", record.error
    assert USER_TOOL in seen["tools"] and "issue_refund" in seen["tools"]
    assert not seen["order"].is_error and seen["order"].structured_content["id"] == 4812
    assert seen["unknown"].is_error and "unknown tool 'no_such_tool'" in text(seen["unknown"])
    assert seen["timeout"].code == mcp_types.REQUEST_TIMEOUT
    assert [(c.tool, c.status) for c in record.calls] == [("get_order", "ok"), ("no_such_tool", "unknown_tool"),
                                                          ("get_approval", "ok"), ("issue_refund", "fault")]
    assert record.calls[-1].committed


# --- odds and ends -----------------------------------------------------------------------------------


def test_a_domain_tool_named_like_the_user_tool_is_refused_not_shadowed(notes_domain: Domain) -> None:
    @tool(kind="write")
    def send_message_to_user(ctx: ToolContext, text: str) -> str:
        """Post a message on the customer's portal.

        Args:
            text: The message.
        """
        return "posted"

    clashing = Domain("notes", schema=notes_domain.schema_sql, fixtures=notes_domain.fixtures,
                      policy=notes_domain.policy, tools=[*notes_domain.tool_list(), send_message_to_user])
    errors: list[str] = []

    async def agent(episode: Episode) -> None:
        async with ToolServer() as server, server.trial(episode) as endpoint:
            start = endpoint.start()
            async with connect(start.mcp_url, start.token, "handshake") as session:
                with pytest.raises(MCPError) as listing:
                    await session.list_tools()
                with pytest.raises(MCPError) as calling:
                    await session.call_tool(USER_TOOL, {"text": "Hello?"})
                errors.extend([listing.value.message, calling.value.message])

    notes_case = load_suite(str(NOTES_CASES)).cases[0]
    record = asyncio.run(run_trial(notes_case, clashing, agent, 0, 1))
    assert record.end_reason == "completed", record.error
    assert len(errors) == 2
    assert all(f"domain 'notes': tool '{USER_TOOL}'" in e and "rename the domain's tool" in e for e in errors)
    assert record.calls == [] and len(record.messages) == 1  # neither tool ran


def test_nothing_but_the_bridge_imports_mcp() -> None:
    code = ("import sys, passhat.serve, passhat.runner, passhat.agents; "
            "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_mcp_error_answer_is_one_json_rpc_shape_with_its_status_kept(tmp_path: Path) -> None:
    from test_http_api import notes_case

    from passhat.serve.app import INVALID_REQUEST_CODE, MAX_BODY, TRIAL_OVER_CODE

    case_, domain = notes_case(tmp_path)
    got: dict[str, httpx2.Response] = {}
    ended: list[TrialEndpoint] = []

    async def go() -> None:
        server = ToolServer()

        async def agent(episode: Any) -> None:
            async with server.trial(episode) as ep, httpx2.AsyncClient(timeout=5) as http:
                ended.append(ep)
                auth = {"authorization": f"Bearer {ep.token}", "accept": "application/json, text/event-stream"}
                url = f"{ep.url}/mcp"
                got["415"] = await http.post(url, headers={**auth, "content-type": "text/plain"}, content=b"{}")
                got["413"] = await http.post(url, headers={**auth, "content-type": "application/json"},
                                             content=b'"' + b"a" * MAX_BODY + b'"')
                got["405"] = await http.put(url, headers=auth, json={})
                got["401"] = await http.post(url, headers={"authorization": "Bearer nope"}, json={})

        try:
            await run_trial(case_, domain, agent, 0, 1)
            async with httpx2.AsyncClient(timeout=5) as http:
                got["410"] = await http.post(f"{ended[0].url}/mcp", json={},
                                             headers={"authorization": f"Bearer {ended[0].token}"})
        finally:
            await server.close()

    asyncio.run(go())
    statuses = {"415": 400, "413": 413, "405": 405, "401": 401, "410": 410}
    for key, status in statuses.items():
        answer = got[key]
        assert answer.status_code == status, key
        assert answer.headers["content-type"].startswith("application/json"), key
        body = answer.json()
        assert set(body) == {"jsonrpc", "id", "error"} and body["jsonrpc"] == "2.0" and body["id"] is None, key
        assert isinstance(body["error"]["message"], str) and body["error"]["message"], key
    assert got["410"].json()["error"]["code"] == TRIAL_OVER_CODE
    assert got["413"].json()["error"] == {"code": INVALID_REQUEST_CODE,
                                          "message": f"request body larger than {MAX_BODY} bytes"}
    assert got["415"].json()["error"]["message"] == "Invalid Content-Type header"


def test_a_plain_text_error_sent_in_parts_becomes_one_json_rpc_answer() -> None:
    from passhat.serve.mcp import _as_jsonrpc

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def answer() -> None:
        wrapped = _as_jsonrpc(send)
        await wrapped({"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"text/plain")]})
        await wrapped({"type": "http.response.body", "body": b"Invalid Content-", "more_body": True})
        await wrapped({"type": "http.response.body", "body": b"Type header"})

    asyncio.run(answer())
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"] and sent[0]["status"] == 400
    assert json.loads(sent[1]["body"])["error"] == {"code": -32600, "message": "Invalid Content-Type header"}
