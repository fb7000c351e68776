"""Agents outside the passhat process — a program, an HTTP service, an isolated Python process — are
judged exactly as in-process agents, and nothing they do can stall or corrupt the run."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import DATA, NOTES, verdicts

PROGRAM = DATA / "programs" / "notes_agent.py"


@pytest.fixture(autouse=True)
def short_client_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients give up on a withheld answer after 1 s (a production client's timeout, made short; shorter
    lets a merely slow answer on a loaded machine look withheld)."""
    monkeypatch.setenv("PASSHAT_TOOL_TIMEOUT_S", "1")


def failed(rec: Any) -> dict[str, str]:
    return {g.name: g.reason for g in rec.grades if g.required and not g.passed}


# --- the same verdicts however the agent is run ------------------------------------------------------


class ReferenceService:
    """A real HTTP service playing a reference agent: the protocol seen from the agent's side."""

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.mode = "ok"

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{path}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                start = json.loads(self.rfile.read(int(self.headers["content-length"])))
                style = self.path.strip("/")
                if style == "crash":
                    self._send(500, b"Internal Server Error: KeyError 'order'")
                    return
                if style == "html":
                    self._send(200, b"<html>the agent is thinking</html>")
                    return
                if style == "deep":
                    self._send(200, b'{"reply": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
                    return
                reply = asyncio.run(service.play(style, start))
                self._send(200, json.dumps({"reply": reply}).encode())

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    async def play(self, style: str, start: dict[str, Any]) -> str | None:
        from passhat.agents import reference_agent
        from passhat.client import RemoteEpisode

        async with RemoteEpisode.connect(start) as episode:
            return await reference_agent(style)(episode)  # type: ignore[arg-type]

    def __enter__(self) -> ReferenceService:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def service() -> Iterator[ReferenceService]:
    with ReferenceService() as srv:
        yield srv


# each suite once and each style once: careful passes every refunds case; hasty passes and fails reimbursement
# cases, faults included (the other two pairings exercise the same paths at twice the CPU: ~30 s)
@pytest.mark.parametrize(("style", "suite"), [("careful", "refunds"), ("hasty", "reimbursement")])
def test_isolated_and_service_agents_reach_the_in_process_verdicts(run_suite: Any, service: ReferenceService,
                                                                   style: str, suite: str) -> None:
    in_process = verdicts(run_suite(suite, style))
    isolated = verdicts(run_suite(suite, style, isolate="process"))
    served = verdicts(run_suite(suite, service.url(style)))
    assert isolated == in_process and served == in_process
    outcomes = {o for o, _ in in_process.values()}
    assert outcomes == ({"pass"} if style == "careful" else {"pass", "fail"})


# --- programs: cmd:"…" --------------------------------------------------------------------------------


def program(behaviour: str) -> str:
    return f"cmd:{sys.executable} {PROGRAM} {behaviour}"


def test_a_program_agent_passes_with_its_reply_on_stdout_and_logs_on_stderr(run_suite: Any, notes_cases: Any) -> None:
    rec = run_suite(notes_cases(), program("good"))[0]
    assert rec.outcome == "pass" and rec.reply.startswith("I added note N-") and "working on it" not in rec.reply
    rec = run_suite(notes_cases(name="again"), program("json_reply"))[0]
    assert rec.outcome == "pass" and rec.reply == "added the note"
    assert rec.usage.input_tokens == 1000 and rec.usage.models == ["gpt-4o-mini"] and rec.usage.cost > 0


def test_a_last_line_nested_100_000_deep_is_the_reply_as_text(run_suite: Any, notes_cases: Any) -> None:
    rec = run_suite(notes_cases(), program("deep_reply"))[0]
    assert rec.end_reason == "completed" and rec.error is None
    assert rec.reply == '{"reply": ' + "[" * 100_000 + "]" * 100_000 + "}"  # as any last line that is not a reply


def test_usage_from_the_agents_own_opentelemetry_spans_is_recorded(run_suite: Any, notes_cases: Any) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs passhat[otel]")
    rec = run_suite(notes_cases(), program("traced"))[0]
    assert rec.outcome == "pass"
    assert [(m.model, m.input_tokens, m.output_tokens) for m in rec.model_calls] == [("gpt-4o-mini", 1200, 80)]
    assert rec.usage.cost > 0  # priced from the built-in table: cost per success works for this agent


@pytest.mark.parametrize(("behaviour", "end_reason", "evidence"), [
    # stopped by the limit's timer: one that ended on its own past the limit reads "ended after …s, past its 3s limit"
    ("hang", "time_limit", "time limit: the agent did not finish within 3s"),
    ("spin", "time_limit", "time limit: the agent did not finish within 3s"),
    ("exit", "agent_error", "exited with status 7; stderr: …Traceback (most recent call last):\nRuntimeError: model said no"),
    ("garbage", "agent_error", "not UTF-8 text"),
])
def test_a_misbehaving_program_fails_its_trial_with_the_reason_and_the_run_goes_on(
        run_suite: Any, notes_cases: Any, behaviour: str, end_reason: str, evidence: str) -> None:
    from tests.agents.hostile import processes_named

    marker = f"passhat-misbehaving-{os.getpid()}-{time.monotonic_ns()}"  # in its argv, so the test can look for it
    # 3 s: time for the sandbox and Python to start on a loaded machine before the tool call
    recs = run_suite(notes_cases("limits: {max_seconds: 3}\n"), f"{program(behaviour)} {marker}", trials=2,
                     concurrency=1)
    assert [(r.outcome, r.end_reason) for r in recs] == [("fail", end_reason)] * 2
    assert evidence in recs[0].error and recs[0].failure is not None
    assert all(r.calls and r.calls[0].status == "ok" for r in recs)  # each trial got as far as its tool call
    assert processes_named(marker) == []  # killed at the limit, not left running


def test_a_run_with_a_hanging_program_finishes_and_exits_normally(notes_cases: Any, tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "passhat", "run", str(notes_cases("limits: {max_seconds: 1}\n")),
                           "--agent", program("hang"), "--trials", "3", "--out", str(out), "--no-sanity", "--no-report",
                           "-q"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "0 of 1 cases passed all 3 trials" in done.stderr and (out / "summary.json").exists()


def test_children_a_program_leaves_behind_are_killed_with_it(run_suite: Any, notes_cases: Any) -> None:
    from tests.agents.hostile import processes_named

    marker = f"passhat-orphan-{os.getpid()}-{time.monotonic_ns()}"
    rec = run_suite(notes_cases("limits: {max_seconds: 20}\n"), f"{program('orphan')} {marker}")[0]
    # completed, not ended by the limit: the child holding stdout for an hour did not keep the trial open
    assert (rec.outcome, rec.end_reason) == ("pass", "completed")
    assert processes_named(marker) == []  # its own session did not save it


def test_a_program_that_does_not_exist_is_bad_input() -> None:
    from passhat.agents import load_agent
    from passhat.errors import PasshatError

    with pytest.raises(PasshatError, match="program 'no-such-agent-binary' not found"):
        load_agent("cmd:no-such-agent-binary --flag")
    with pytest.raises(PasshatError, match="cannot split"):
        load_agent('cmd:python "unclosed')


# --- services: http://… ---------------------------------------------------------------------------------


def test_a_service_that_crashes_or_answers_garbage_fails_the_trial(run_suite: Any, notes_cases: Any,
                                                                    service: ReferenceService) -> None:
    crash = run_suite(notes_cases(), service.url("crash"))[0]
    assert (crash.outcome, crash.end_reason) == ("fail", "agent_error") and "answered HTTP 500" in crash.error
    html = run_suite(notes_cases(name="html"), service.url("html"))[0]
    assert html.outcome == "fail" and "something other than" in html.error and "<html>" in html.error
    deep = run_suite(notes_cases(name="deep"), service.url("deep"))[0]
    assert (deep.outcome, deep.end_reason) == ("fail", "agent_error") and "recursion limit exceeded" in deep.error
    assert "Traceback" not in deep.error


def test_a_service_that_cannot_be_reached_is_an_infrastructure_error(run_suite: Any, notes_cases: Any) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    recs = run_suite(notes_cases(), f"http://127.0.0.1:{port}/agent", trials=6, concurrency=1)
    assert [(r.outcome, r.attempt) for r in recs] == [("error", 2)] * 6
    assert "cannot be reached" in recs[0].error
    assert "circuit open after 4 consecutive failed attempts" in recs[-1].error  # later trials fail at once


# --- isolated Python agents: --isolate process ----------------------------------------------------------


def agent(name: str) -> str:
    return f"{NOTES / 'agents.py'}:{name}"


@pytest.mark.parametrize(("name", "limit", "end_reason", "evidence"), [
    ("cpu_bound", 2, "time_limit", "time limit"),
    ("sleeps_past_limit", 2, "time_limit", "time limit"),
    ("exits", 30, "agent_error", "SystemExit(3)"),  # generous: a loaded machine starts Python slowly
    ("hard_exit", 30, "agent_error", "exited with status 4"),
])
def test_an_isolated_agent_cannot_stall_or_kill_the_run(run_suite: Any, notes_cases: Any, name: str, limit: int,
                                                         end_reason: str, evidence: str) -> None:
    recs = run_suite(notes_cases(f"limits: {{max_seconds: {limit}}}\n"), agent(name), trials=2, isolate="process")
    assert [(r.outcome, r.end_reason) for r in recs] == [("fail", end_reason)] * 2
    assert evidence in recs[0].error


def test_an_isolated_agent_cannot_write_to_the_world_behind_the_boundary(run_suite: Any, notes_cases: Any) -> None:
    inside = run_suite(notes_cases(), agent("pokes_the_world"))[0]
    assert inside.calls == [] and inside.diff["notes"]  # in-process, an agent can reach the database...
    isolated = run_suite(notes_cases(name="iso"), agent("pokes_the_world"), isolate="process")[0]
    assert isolated.outcome == "fail" and isolated.diff == {}  # ...in a process of its own it cannot
    assert "AttributeError" in isolated.error and "_boundary" in isolated.error


def test_isolation_is_only_for_python_agents() -> None:
    from passhat.agents import load_agent
    from passhat.errors import PasshatError

    with pytest.raises(PasshatError, match="--isolate process applies to Python agents"):
        load_agent("cmd:true", isolate="process")


def test_remote_episodes_load_no_certificates_for_plain_http_and_share_one_connection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain-HTTP tool server needs no CA bundle (loading it cost every isolated trial ~0.1 s of CPU), and the
    episodes of one event loop share the loop's client: the second trial's calls go over the first's
    connection."""
    import ssl

    from passhat.cases import load_suite
    from passhat.client import RemoteEpisode
    from passhat.localhttp import shared_client
    from passhat.runner.trial import run_trial
    from passhat.serve import ToolServer

    def no_certificates(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a CA bundle was loaded for plain HTTP")

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", no_certificates)
    suite = load_suite(str(NOTES / "cases"))
    case = suite.cases[0]
    seen: list[tuple[Any, ...]] = []

    async def go() -> None:
        async with ToolServer(mcp=False) as server:
            async def agent(episode: Any) -> str:
                async with server.trial(episode) as endpoint:
                    async with RemoteEpisode.connect(endpoint.start()) as remote:
                        await remote.call("list_notes", {})
                    (conn,) = [c for idle in (await shared_client())._idle.values() for c in idle]
                    seen.append(conn.transport.get_extra_info("sockname"))  # type: ignore[union-attr]
                return "done"

            for trial in range(2):
                record = await run_trial(case, suite.domain_of(case), agent, trial, trial)
                assert [c.status for c in record.calls] == ["ok"]

    asyncio.run(go())
    assert len(seen) == 2 and seen[0] == seen[1]


def test_a_remote_episode_with_https_urls_verifies_tls() -> None:
    """A start message with https URLs gets a verifying client, never an unverified one."""
    import ssl

    from passhat.client import RemoteEpisode

    base = "https://tools.example:8443/trials/t1"
    start = {"case_id": "c", "trial": 0, "seed": 0, "domain": "d", "instruction": "i", "policy": "p",
             "trial_url": base, "tools_url": f"{base}/tools", "user_url": f"{base}/user", "usage_url": f"{base}/usage",
             "otlp_url": f"{base}/otlp", "token": "t", "deadline": 0.0, "time_limit_s": 1.0, "tool_timeout_s": 1.0}
    episode = RemoteEpisode(start)
    context = episode._httpx._transport._pool._ssl_context  # type: ignore[attr-defined]  # httpx's connection pool
    assert context.verify_mode == ssl.CERT_REQUIRED
