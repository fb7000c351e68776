"""The plain JSON tool API of a trial: same boundary as in-process, tokens per trial, faults withheld for real."""

from __future__ import annotations

import asyncio
import gc
import socket
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from passhat.cases import load_suite
from passhat.domain import load_domain
from passhat.episode import Episode
from passhat.runner.records import TrialRecord
from passhat.runner.trial import run_trial
from passhat.serve import ToolServer, TrialEndpoint

NOTES = Path(__file__).parents[1] / "data" / "notes"
CASE = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))


def notes_case(tmp_path: Path, extra: str = "") -> tuple[Any, Any]:
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    (folder / "c.yaml").write_text(CASE + extra)
    suite = load_suite(str(folder))
    return suite.cases[0], load_domain(str(NOTES / "domain.py"))


Body = Callable[[TrialEndpoint, httpx2.AsyncClient], Awaitable[str | None]]


def remote(server: ToolServer, body: Body) -> Callable[[Episode], Awaitable[str | None]]:
    """An agent that does its work over HTTP through the trial's endpoint (as an external agent would)."""

    async def agent(episode: Episode) -> str | None:
        async with server.trial(episode) as endpoint, httpx2.AsyncClient(
                headers={"authorization": f"Bearer {endpoint.token}"}, timeout=5) as http:
            return await body(endpoint, http)

    return agent


def run(case: Any, domain: Any, body: Body, **server_kw: Any) -> TrialRecord:
    async def go() -> TrialRecord:
        server = ToolServer(**server_kw)
        try:
            return await run_trial(case, domain, remote(server, body), 0, 1)
        finally:
            await server.close()

    return asyncio.run(go())


def test_tools_listed_and_called_over_http_are_recorded_like_in_process(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path)

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        start = (await http.get(ep.url)).json()
        assert start["case_id"] == case.id and start["tools_url"] == f"{ep.url}/tools" and start["token"] == ep.token
        assert start["tags"] == {"scenario": "normal", "risk": "low"}  # the case's public metadata
        tools = (await http.get(start["tools_url"])).json()["tools"]
        assert {t["name"] for t in tools} == {"list_notes", "get_note", "add_note", "wipe_audit", "broken"}
        add = next(t for t in tools if t["name"] == "add_note")
        assert add["kind"] == "write" and add["parameters"]["required"] == ["title"]
        made = (await http.post(f"{start['tools_url']}/add_note", json={"title": "call mom", "priority": 2})).json()
        assert made == {"ok": True, "result": {"id": made["result"]["id"]}}
        denied = (await http.post(f"{start['tools_url']}/get_note", json={"note_id": "N-2"})).json()
        assert denied["ok"] is False and denied["error"].startswith("permission denied")
        return f"added {made['result']['id']}"

    rec = run(case, domain, body)
    assert [c.status for c in rec.calls] == ["ok", "denied"]
    assert rec.diff["notes"][0]["kind"] == "inserted" and rec.reply.startswith("added N-")


def test_a_request_without_this_trials_token_is_refused_and_recorded_nowhere(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path)
    server = ToolServer()
    a_open, b_done = asyncio.Event(), asyncio.Event()
    seen: dict[str, Any] = {}

    async def trial_a(episode: Episode) -> str:
        async with server.trial(episode) as ep:
            seen["a"] = ep
            a_open.set()
            await b_done.wait()
        return ""

    async def trial_b(episode: Episode) -> str:
        await a_open.wait()
        async with server.trial(episode) as ep, httpx2.AsyncClient(timeout=5) as http:
            url = f"{ep.url}/tools/add_note"
            note = {"title": "call mom", "priority": 2}
            statuses = [
                (await http.post(url, json=note)).status_code,  # no token
                (await http.post(url, json=note, headers={"authorization": f"Bearer {seen['a'].token}"})).status_code,
                (await http.post(url, json=note, headers={"authorization": "Bearer " + "x" * 43})).status_code,
                (await http.post(url, json=note, headers={"authorization": f"Basic {ep.token}"})).status_code,
                (await http.get(f"{server.base_url}/trials/nonexistent/tools",
                                headers={"authorization": f"Bearer {ep.token}"})).status_code,
            ]
            over_mcp = await http.post(f"{ep.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                       headers={"authorization": f"Bearer {seen['a'].token}"})
            seen["mcp"] = (over_mcp.status_code, over_mcp.json())
            seen["statuses"], seen["refused"] = statuses, server.router.refused
        b_done.set()
        return ""

    async def go() -> tuple[TrialRecord, TrialRecord]:
        try:
            return await asyncio.gather(run_trial(case, domain, trial_a, 0, 1), run_trial(case, domain, trial_b, 1, 2))
        finally:
            await server.close()

    rec_a, rec_b = asyncio.run(go())
    assert seen["statuses"] == [401, 401, 401, 401, 401] and seen["refused"] == 6
    assert seen["mcp"] == (401, {"jsonrpc": "2.0", "id": None,  # a JSON-RPC error an MCP client can show
                                 "error": {"code": -32600, "message": "missing or wrong bearer token for this trial"}})
    assert rec_a.calls == [] and rec_b.calls == [] and rec_b.diff == {} and rec_a.diff == {}


def test_a_lost_response_hangs_until_the_client_gives_up_after_the_write_committed(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path, "faults: [{tool: add_note, kind: drop_response}]\n")

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        url = f"{ep.url}/tools/add_note"
        with pytest.raises(httpx2.ReadTimeout):
            await http.post(url, json={"title": "call mom", "priority": 2}, timeout=0.3)
        notes = (await http.post(f"{ep.url}/tools/list_notes", json={})).json()["result"]
        assert [n["title"] for n in notes] == ["groceries", "call mom"]  # it did commit: look before retrying
        return "added"

    rec = run(case, domain, body)
    assert [(c.status, c.fault_kind, c.committed) for c in rec.calls] == [("fault", "drop_response", True), ("ok", None, True)]
    assert rec.outcome == "pass"


def test_a_timeout_fault_hangs_and_does_not_run_the_tool(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path, "faults: [{tool: add_note, kind: timeout}]\n")

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        with pytest.raises(httpx2.ReadTimeout):
            await http.post(f"{ep.url}/tools/add_note", json={"title": "call mom", "priority": 2}, timeout=0.3)
        again = (await http.post(f"{ep.url}/tools/add_note", json={"title": "call mom", "priority": 2})).json()
        assert again["ok"]
        return "added"

    rec = run(case, domain, body)
    assert [(c.status, c.committed) for c in rec.calls] == [("fault", False), ("ok", True)]
    assert rec.outcome == "pass"


def test_a_held_call_is_released_when_the_trial_ends(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path, "faults: [{tool: add_note, kind: timeout}]\nlimits: {max_seconds: 0.5}\n")

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        await http.post(f"{ep.url}/tools/add_note", json={"title": "call mom"}, timeout=30)  # no client timeout
        return "never"

    rec = run(case, domain, body)
    assert rec.end_reason == "time_limit" and rec.outcome == "fail"


def test_bad_bodies_are_the_agents_recorded_mistakes_and_limits_end_the_trial(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path, "limits: {max_steps: 2}\n")

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        bad = await http.post(f"{ep.url}/tools/add_note", content=b"{not json")
        assert bad.status_code == 200 and bad.json()["error"] == "arguments must be a JSON object"
        listed = await http.post(f"{ep.url}/tools/add_note", json=["call mom"])
        assert listed.json()["ok"] is False
        over = await http.post(f"{ep.url}/tools/list_notes", json={})
        assert over.status_code == 409 and over.json()["limit"] == "step_limit"
        assert (await http.post(f"{ep.url}/tools/list_notes", content=b"x" * (4 * 1024 * 1024 + 1))).status_code == 413
        assert (await http.get(f"{ep.url}/nowhere")).status_code == 404
        return "done"

    rec = run(case, domain, body)
    assert [c.status for c in rec.calls] == ["invalid_arguments", "invalid_arguments"]
    assert rec.calls[0].arguments == "{not json"
    assert rec.end_reason == "step_limit"


def test_the_user_usage_and_otlp_endpoints(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path)

    class Prices:
        def price(self, model: str) -> Any:
            return type("P", (), {"cost": staticmethod(lambda i, o: (i * 1 + o * 2) / 1_000_000)})() if model == "m1" else None

    otlp = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"name": "chat m1", "startTimeUnixNano": "1000000000", "endTimeUnixNano": "1500000000", "attributes": [
            {"key": "gen_ai.request.model", "value": {"stringValue": "m1"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1000"}},
            {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "500"}}]},
        {"name": "tool span", "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "x"}}]}]}]}]}

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        answer = (await http.post(f"{ep.url}/user", json={"text": "What body should the note have?"})).json()
        assert answer == {"reply": "body: about the weekend"}
        assert (await http.post(f"{ep.url}/user", json={"say": "x"})).status_code == 400
        assert (await http.post(f"{ep.url}/usage", json={"model": "other", "input_tokens": 10, "output_tokens": 5,
                                                         "cost": 0.25})).json() == {"ok": True}
        assert (await http.post(f"{ep.url}/usage", json={"input_tokens": -1})).status_code == 400
        assert (await http.post(f"{ep.url}/otlp/v1/traces", json=otlp)).status_code == 200
        from google.protobuf.json_format import ParseDict
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        raw = ParseDict(otlp, ExportTraceServiceRequest()).SerializeToString()
        sent = await http.post(f"{ep.url}/otlp/v1/traces", content=raw, headers={"content-type": "application/x-protobuf"})
        assert sent.status_code == 200
        await http.post(f"{ep.url}/tools/add_note", json={"title": "call mom", "priority": 2})
        return "added"

    rec = run(case, domain, body, prices=Prices())
    assert [m.text for m in rec.messages[1:3]] == ["What body should the note have?", "body: about the weekend"]
    assert [(m.model, m.input_tokens, m.output_tokens) for m in rec.model_calls] == [
        ("other", 10, 5), ("m1", 1000, 500), ("m1", 1000, 500)]
    assert rec.usage.cost == pytest.approx(0.25 + 2 * 0.002) and rec.model_calls[1].latency_s == pytest.approx(0.5)


def test_a_port_that_cannot_be_bound_is_an_infrastructure_error(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
            return "unreachable"

        from passhat.errors import InfrastructureError

        with pytest.raises(InfrastructureError, match="cannot listen on 127.0.0.1:"):
            run(case, domain, body, port=taken.getsockname()[1])
    finally:
        taken.close()


def test_requests_after_the_trial_are_refused_with_410(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path)
    kept: dict[str, Any] = {}

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        kept["url"], kept["token"] = ep.url, ep.token
        return "nothing"

    async def go() -> int:
        server = ToolServer()
        try:
            await run_trial(case, domain, remote(server, body), 0, 1)
            async with httpx2.AsyncClient() as http:
                late = await http.post(f"{kept['url']}/tools/list_notes", json={},
                                       headers={"authorization": f"Bearer {kept['token']}"})
                return late.status_code
        finally:
            await server.close()

    assert asyncio.run(go()) == 410


def test_an_ended_trial_is_remembered_for_its_410_without_keeping_its_episode_alive(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path)
    kept: dict[str, Any] = {}

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        kept["url"], kept["token"], kept["episode"] = ep.url, ep.token, weakref.ref(ep.episode)
        return "nothing"

    async def go() -> tuple[int, int]:
        server = ToolServer()
        try:
            await run_trial(case, domain, remote(server, body), 0, 1)
            gc.collect()
            assert kept["episode"]() is None  # the server remembers the trial, not its episode (and its world)
            async with httpx2.AsyncClient() as http:
                statuses = []
                for token in (kept["token"], kept["token"][:-1]):
                    late = await http.post(f"{kept['url']}/tools/list_notes", json={},
                                           headers={"authorization": f"Bearer {token}"})
                    statuses.append(late.status_code)
                return statuses[0], statuses[1]
        finally:
            await server.close()

    assert asyncio.run(go()) == (410, 401)  # the trial's own token learns it is over; another token learns nothing


def test_a_call_the_client_gave_up_on_is_recorded_as_abandoned(tmp_path: Path) -> None:
    """A real (unplanned) slow answer the agent stopped waiting for: the record explains the retry after it."""
    case, domain = notes_case(tmp_path, "faults: [{tool: add_note, kind: latency, seconds: 0.5}]\n")

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        with pytest.raises(httpx2.ReadTimeout):
            await http.post(f"{ep.url}/tools/add_note", json={"title": "call mom", "priority": 2}, timeout=0.1)
        await asyncio.sleep(0.6)  # the call completes after the client has gone
        await http.post(f"{ep.url}/tools/list_notes", json={})
        return "added"

    rec = run(case, domain, body)
    assert [(c.tool, c.status, c.committed, c.abandoned) for c in rec.calls] == [
        ("add_note", "ok", True, True), ("list_notes", "ok", True, False)]


def test_the_start_message_suggests_a_client_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from passhat.errors import PasshatError
    from passhat.serve.endpoint import tool_timeout

    monkeypatch.delenv("PASSHAT_TOOL_TIMEOUT_S", raising=False)
    assert [tool_timeout(limit) for limit in (2, 60, 600)] == [1.0, 15.0, 30.0]
    monkeypatch.setenv("PASSHAT_TOOL_TIMEOUT_S", "0.25")
    assert tool_timeout(60) == 0.25
    monkeypatch.setenv("PASSHAT_TOOL_TIMEOUT_S", "soon")
    with pytest.raises(PasshatError, match="PASSHAT_TOOL_TIMEOUT_S='soon': expected a number of seconds > 0"):
        tool_timeout(60)


def test_json_nested_past_the_parsers_stack_is_the_agents_bad_request_never_a_500(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path)
    deep = b"[" * 100_000 + b"]" * 100_000

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        call = await http.post(f"{ep.url}/tools/add_note", content=deep)
        assert call.status_code == 200 and call.json() == {"ok": False, "error": "arguments must be a JSON object"}
        assert (await http.post(f"{ep.url}/user", content=b'{"text": ' + deep + b"}")).status_code == 400
        otlp = await http.post(f"{ep.url}/otlp/v1/traces", content=deep, headers={"content-type": "application/json"})
        assert otlp.status_code == 400 and "not an OTLP trace request" in otlp.json()["error"]
        return "done"

    rec = run(case, domain, body)
    assert [(c.status, c.arguments) for c in rec.calls] == [("invalid_arguments", "<nested deeper than 64 levels>")]


def test_a_401_names_the_realm_and_the_token_problem_and_advertises_no_oauth(tmp_path: Path) -> None:
    case, domain = notes_case(tmp_path)

    async def body(ep: TrialEndpoint, http: httpx2.AsyncClient) -> str:
        async with httpx2.AsyncClient(timeout=5) as anonymous:
            none = await anonymous.get(ep.url)
            wrong = await anonymous.get(ep.url, headers={"authorization": "Bearer nope"})
        assert none.status_code == wrong.status_code == 401
        assert none.headers["www-authenticate"] == 'Bearer realm="passhat"'
        assert wrong.headers["www-authenticate"].startswith('Bearer realm="passhat", error="invalid_token"')
        assert "resource_metadata" not in wrong.headers["www-authenticate"]
        return "done"

    run(case, domain, body)
