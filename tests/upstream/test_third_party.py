"""Real third-party MCP servers, offline: each runs its suite in examples/upstream with the careful and the
hasty scripted agent, and every case reaches the verdict it was built for.

The servers are installed by ``bash examples/upstream/install-servers.sh`` (``.ci/run`` does it), each in
a place of its own. Without them these tests skip saying what to run — except under CI, where
``PASSHAT_REQUIRE_MCP_SERVERS=1`` makes their absence a failure, so CI never silently tests nothing.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples" / "upstream"
SERVERS = Path(os.environ.get("PASSHAT_MCP_SERVERS") or Path.home() / ".cache" / "passhat" / "mcp-servers")
INSTALLED = {
    "filesystem": SERVERS / "filesystem" / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js",
    "sqlite": SERVERS / "sqlite" / "bin" / "mcp-server-sqlite",
    "postgres": SERVERS / "alchemy" / "bin" / "mcp-alchemy",
}


def need(server: str) -> None:
    """Skip (or, under CI, fail) when a third-party server is not installed, saying how to install it."""
    path = INSTALLED[server]
    if path.exists():
        return
    message = (f"{server} MCP server not installed at {path}: run bash examples/upstream/install-servers.sh "
               "(PASSHAT_MCP_SERVERS chooses the folder)")
    if os.environ.get("PASSHAT_REQUIRE_MCP_SERVERS") == "1":
        pytest.fail(message)
    pytest.skip(message)


@functools.cache
def loaded(suite: str) -> Any:
    """The suite loaded once for both agents: its server lists its tools once."""
    from passhat.cases import load_suite

    return load_suite(str(EXAMPLES / suite / "cases"))


def verdicts(suite: str, agent: str, tmp_path: Path) -> dict[str, Any]:
    """Each case's outcome and its first failing check, one trial each, with the agent of agents.py."""
    import passhat

    run = passhat.evaluate(loaded(suite), f"{EXAMPLES / 'agents.py'}:{agent}", trials=1,
                           concurrency=4, sanity=False, out=tmp_path / f"{suite}-{agent}")
    out: dict[str, Any] = {}
    for record in run.records():
        failed = [g.name.split(":")[0] for g in record.failed_grades()]
        out[record.case_id] = f"fail: {failed[0] if failed else record.error}" if record.outcome == "fail" else record.outcome
    return out


EXPECTED = {
    "filesystem": {
        "careful": {"add-todo": "pass", "add-todo-lost-response": "pass", "rename-draft": "pass", "read-timezone": "pass"},
        "hasty": {"add-todo": "pass", "add-todo-lost-response": "fail: file_matches", "rename-draft": "fail: file_absent",
                  "read-timezone": "fail: unchanged_except"},
    },
    "shop": {  # the same four cases on mcp-server-sqlite (a SQLite file) and mcp-alchemy (PostgreSQL)
        "careful": {"ship-order": "pass", "refund-lost-response": "pass", "restock": "pass", "count-pending": "pass"},
        "hasty": {"ship-order": "fail: unchanged_except", "refund-lost-response": "fail: row_count",
                  "restock": "fail: field_equals", "count-pending": "pass"},
    },
}


@pytest.mark.parametrize("agent", ["careful", "hasty"])
def test_the_filesystem_server_on_a_workspace_copy(agent: str, tmp_path: Path) -> None:
    need("filesystem")
    assert verdicts("filesystem", agent, tmp_path) == EXPECTED["filesystem"][agent]


@pytest.mark.parametrize("agent", ["careful", "hasty"])
def test_mcp_server_sqlite_on_a_sqlite_file_per_trial(agent: str, tmp_path: Path) -> None:
    need("sqlite")
    assert verdicts("sqlite", agent, tmp_path) == EXPECTED["shop"][agent]


@pytest.mark.parametrize("agent", ["careful", "hasty"])
def test_mcp_alchemy_read_write_on_a_postgresql_database_per_trial(agent: str, tmp_path: Path) -> None:
    need("postgres")
    pytest.importorskip("psycopg", reason="PostgreSQL worlds need psycopg: pip install 'passhat[postgres]'")
    assert verdicts("postgres", agent, tmp_path) == EXPECTED["shop"][agent]
