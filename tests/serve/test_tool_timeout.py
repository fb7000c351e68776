"""The client timeout passhat suggests keeps planned timeouts cheap and honest (issue 24).

It was a quarter of the time limit, 15 s at the default 60 s: every planned timeout or lost response cost an
external agent 15 s of wall time, for tools that answer from an in-memory database in milliseconds.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from passhat.cases import load_suite
from passhat.domain import Domain, load_domain
from passhat.episode import Episode
from passhat.runner.trial import run_trial
from passhat.serve import ToolServer
from passhat.serve.endpoint import FAST_TOOL_TIMEOUT_S, tool_timeout
from passhat.tools import ToolContext, tool

NOTES = Path(__file__).parents[1] / "data" / "notes"
CASE_TEXT = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))


@pytest.fixture(autouse=True)
def no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PASSHAT_TOOL_TIMEOUT_S", raising=False)


@pytest.mark.parametrize(("limit", "slowest", "expected"), [
    (60, 0.0, 2.0),     # database tools, no planned latency: 2 s, not 15
    (60, 0.05, 2.0),    # the built-in latency faults (0.05 s) fit easily
    (60, 5.0, 11.0),    # a 5 s latency must come back slow, not turn into a timeout: 2 × 5 + 1
    (4, 0.0, 1.0),      # never more than a quarter of the limit (at least 1 s)
    (60, None, 15.0),   # a tool that may wait on the world outside: a quarter of the limit, as before
    (600, None, 30.0),
    (2, None, 1.0),
])
def test_the_suggested_timeout(limit: float, slowest: float | None, expected: float) -> None:
    assert tool_timeout(limit, slowest) == expected


def test_the_variable_still_sets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSHAT_TOOL_TIMEOUT_S", "0.25")
    assert tool_timeout(60, 0.0) == 0.25 and tool_timeout(60, None) == 0.25


@tool(kind="read")
async def fetch_remote(ctx: ToolContext) -> dict:
    """Ask a service elsewhere (an async tool: it may wait as long as the world outside takes)."""
    return {}


def start_message_of(tmp_path: Path, extra: str = "", tools: list[Any] | None = None, user: Any = None) -> Any:
    folder = tmp_path / "cases"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "c.yaml").write_text(CASE_TEXT + extra)
    case = load_suite(str(folder)).cases[0]
    base = load_domain(str(NOTES / "domain.py"))
    domain = Domain("notes", schema=base.schema_sql, fixtures=base.fixtures, policy="",
                    tools=[*base.tool_list(), *(tools or [])])
    seen: list[Any] = []

    async def go() -> None:
        async with ToolServer() as server:
            async def agent(episode: Episode) -> str:
                async with server.trial(episode) as endpoint:
                    seen.append(endpoint.start())
                return "done"

            await run_trial(case, domain, agent, 0, 1, user=user)

    asyncio.run(go())
    return seen[0]


def test_database_tools_get_the_fast_timeout(tmp_path: Path) -> None:
    assert start_message_of(tmp_path).tool_timeout_s == FAST_TOOL_TIMEOUT_S == 2.0


def test_a_planned_latency_stretches_it(tmp_path: Path) -> None:
    start = start_message_of(tmp_path, "faults: [{tool: list_notes, kind: latency, seconds: 3}]\n")
    assert start.tool_timeout_s == 7.0


def test_an_async_tool_or_a_model_played_user_keeps_the_long_one(tmp_path: Path) -> None:
    assert start_message_of(tmp_path / "a", tools=[fetch_remote]).tool_timeout_s == 15.0

    class ModelUser:  # a user whose replies take a model call (over MCP the user is a tool too)
        async def reply(self, text: str) -> str | None:
            return None

    assert start_message_of(tmp_path / "b", user=lambda case, seed, boundary: ModelUser()).tool_timeout_s == 15.0
