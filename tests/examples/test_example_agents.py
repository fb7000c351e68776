"""The example agents in examples/agents — a Node program, a FastAPI service, an OpenAI Agents SDK program on
MCP — run the refunds suite against the policy model and reach the in-process reference agents' verdicts:
careful passes everything, hasty fails the fault and permission cases, with the same failure categories.
The policy model makes the reference agent's decisions, so any difference is the example's (or passhat's
transport's) doing."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.examples.conftest import (
    EXAMPLES,
    REPRESENTATIVE,
    STYLES,
    TOOL_TIMEOUT_S,
    assert_same_as_reference,
    decisions,
    failures,
    run_refunds,
    verdicts,
)


def test_the_examples_cases_cover_the_suite(reference: dict[str, Any]) -> None:
    """Every fault kind the refunds suite plans, every failure category and outcome the reference agents
    reach on it, and a case that asks the user: all in the examples' cases."""
    from passhat.cases import load_suite

    suite = {case.id: case for case in load_suite("refunds").cases}
    kinds = {fault.kind for case in suite.values() for fault in case.faults}
    assert kinds == {fault.kind for case in REPRESENTATIVE for fault in suite[case].faults}
    for style in STYLES:
        assert set(verdicts(reference[style]).values()) == {verdicts(reference[style])[c] for c in REPRESENTATIVE}
    asked = reference["careful"]["order-number-on-request-4840"].messages
    assert [m.role for m in asked].count("user") > 1  # the agent asked, the simulated user answered


# --- a Node program, through cmd: -------------------------------------------------------------------------------


def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.skip("node is not on PATH (the Node example needs Node 20 or later)")
    version = subprocess.run([path, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.skip(f"the Node example needs Node 20 or later (global fetch, AbortSignal.timeout); found {version}")
    return path


@pytest.mark.parametrize("style", STYLES)
def test_the_node_agent_reaches_the_reference_verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       reference: dict[str, Any], style: str) -> None:
    monkeypatch.setenv("OPENAI_MODEL", f"policy-{style}")
    records = run_refunds(tmp_path, f"cmd:{node()} {EXAMPLES / 'node' / 'agent.mjs'}")
    assert failures(records) == {}
    assert_same_as_reference(records, reference[style], style)
    assert all(r.usage.input_tokens > 0 and r.usage.models == [f"policy-{style}"] for r in records.values())


# --- a FastAPI service, through http:// ------------------------------------------------------------------------------


@pytest.fixture
def fastapi_service(fake_model: Any) -> Iterator[Any]:
    """``start(model)``: the example service on a free port (uvicorn in a thread); returns its /agent URL."""
    pytest.importorskip("fastapi", reason="the FastAPI example needs fastapi (pip install -e '.[test]')")
    import uvicorn

    spec = importlib.util.spec_from_file_location("fastapi_example_app", EXAMPLES / "fastapi_service" / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    servers: list[tuple[Any, threading.Thread]] = []

    def start(model: str) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        app = module.create_app(model=model, base_url=fake_model.openai_url, api_key="not-used")
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            thread.join(0.01)
            assert thread.is_alive(), "the example service did not start"
        servers.append((server, thread))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/agent"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(5)


@pytest.mark.parametrize("style", STYLES)
def test_the_fastapi_service_reaches_the_reference_verdicts(tmp_path: Path, fastapi_service: Any,
                                                            reference: dict[str, Any], style: str) -> None:
    records = run_refunds(tmp_path, fastapi_service(f"policy-{style}"))
    assert failures(records) == {}
    assert_same_as_reference(records, reference[style], style)
    # usage reported per model call as it happened, with its latency
    assert all(r.model_calls and all(m.latency_s is not None and m.input_tokens > 0 for m in r.model_calls)
               for r in records.values())


# --- an OpenAI Agents SDK program on the trial's MCP server, through cmd: ------------------------------------------

AGENTS_SDK_PROGRAM = EXAMPLES / "openai_agents_mcp" / "agent.py"


def agents_sdk_example() -> Any:
    pytest.importorskip("agents", reason="the Agents SDK example needs openai-agents (pip install -e '.[test]')")
    pytest.importorskip("mcp", reason="the Agents SDK example needs passhat's MCP server (pip install -e '.[test]')")
    spec = importlib.util.spec_from_file_location("agents_sdk_example", AGENTS_SDK_PROGRAM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def agents_sdk_service(fake_model: Any) -> Iterator[Any]:
    """``start(model)``: the example's ``run_trial`` behind a local URL (passhat POSTs each start message).

    The program imports the Agents SDK once per trial (1.5-5 s of CPU here, mostly the MCP and OpenAI type
    modules), so the whole suite runs its trial function in this process; the MCP traffic is the same,
    only the start message arrives by POST instead of PASSHAT_START. The program itself runs under cmd:
    in the test after this one."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from agents import set_tracing_disabled
    from openai import AsyncOpenAI

    example = agents_sdk_example()
    set_tracing_disabled(True)
    servers: list[ThreadingHTTPServer] = []

    def start(model: str) -> str:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                trial = json.loads(self.rfile.read(int(self.headers["content-length"])))
                client = AsyncOpenAI(base_url=fake_model.openai_url, api_key="not-used")
                answer = asyncio.run(example.run_trial(trial, model=model, client=client, tool_timeout_s=TOOL_TIMEOUT_S))
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/agent"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("style", STYLES)
def test_the_agents_sdk_agent_on_mcp_reaches_the_reference_verdicts(tmp_path: Path, agents_sdk_service: Any,
                                                                    reference: dict[str, Any], style: str) -> None:
    records = run_refunds(tmp_path, agents_sdk_service(f"policy-{style}"))
    assert failures(records) == {}
    assert_same_as_reference(records, reference[style], style)
    assert all(r.usage.input_tokens > 0 for r in records.values())


@pytest.mark.parametrize(("style", "cases"), [
    ("careful", ["order-number-on-request-4840", "refund-4812-drop-response"]),  # asks the user over MCP; looks before retrying
    ("hasty", ["refund-4812-drop-response"]),  # retries the lost write blindly: two refunds
])
def test_the_agents_sdk_program_runs_under_cmd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                reference: dict[str, Any], style: str, cases: list[str]) -> None:
    agents_sdk_example()
    monkeypatch.setenv("OPENAI_MODEL", f"policy-{style}")
    records = run_refunds(tmp_path, f"cmd:{sys.executable} {AGENTS_SDK_PROGRAM}", cases=cases)
    assert failures(records) == {}
    expected = {case: reference[style][case] for case in cases}
    assert verdicts(records) == verdicts(expected) and decisions(records) == decisions(expected)
