"""Upstream MCP tools through the tool boundary: listing, arguments, permissions, faults, the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.tools import ToolContext, ToolFailure, tool
from passhat.upstream.tools import UpstreamTool
from tests.upstream.conftest import NOTES_WS, case, notes_domain, trial


def test_listing_reads_kinds_idempotence_and_the_servers_own_schemas(notes: Domain) -> None:
    tools = notes.tools
    assert sorted(tools) == ["delete_note", "list_notes", "read_note", "write_note"]
    assert all(isinstance(t, UpstreamTool) and t.server == "notes" for t in tools.values())
    assert {n: t.kind for n, t in tools.items()} == {
        "list_notes": "read", "read_note": "read", "write_note": "write", "delete_note": "write"}
    assert [n for n, t in tools.items() if t.idempotent] == ["write_note"]  # idempotentHint
    assert tools["write_note"].spec()["parameters"]["properties"]["text"] == {"type": "string", "minLength": 1}
    overridden = notes_domain(kinds={"delete_note": "read"}, idempotent=["delete_note"])
    assert overridden.tools["delete_note"].kind == "read" and overridden.tools["delete_note"].idempotent
    assert not overridden.tools["write_note"].idempotent  # the list replaces the annotations
    assert overridden.content_hash() != notes.content_hash()


def test_an_override_naming_a_tool_the_server_lacks_is_bad_input() -> None:
    with pytest.raises(DomainError, match=r"upstream server 'notes': kinds names 'rm_note', which it does not "
                                          r"list; it lists: delete_note, list_notes"):
        assert notes_domain(kinds={"rm_note": "write"}).tools


def test_a_native_tool_and_an_upstream_tool_combine_and_may_not_share_a_name() -> None:
    @tool(kind="read")
    def word_count(ctx: ToolContext, text: str) -> int:
        """Words in a text.

        Args:
            text: The text.
        """
        return len(text.split())

    combined = notes_domain(tools=[word_count])
    assert sorted(combined.tools) == ["delete_note", "list_notes", "read_note", "word_count", "write_note"]
    record = trial(combined, [("read_note", {"name": "todo"}), ("word_count", {"text": "a b c"})])
    assert [(c.tool, c.status, c.result) for c in record.calls] == [
        ("read_note", "ok", "call the plumber\nrenew passport\n"), ("word_count", "ok", 3)]

    @tool(kind="read")
    def read_note(ctx: ToolContext, name: str) -> str:
        """A clash.

        Args:
            name: A name.
        """
        return name

    with pytest.raises(DomainError, match="tool 'read_note': a native @tool has the same name"):
        assert notes_domain(tools=[read_note]).tools


def test_calls_go_through_the_boundary_before_they_reach_the_server(notes: Domain) -> None:
    record = trial(notes, [
        ("write_note", {"name": "empty", "text": ""}),      # the server would write it; the schema says minLength 1
        ("write_note", {"name": "x", "text": "y", "extra": 1}),
        ("write_note", {"name": "locked-plans", "text": "mine"}),   # the server refuses this identity
        ("delete_note", {"name": "todo"}),                          # forbidden in this case
        ("list_notes", {}),
        ("write_note", {"name": "plans", "text": "go north"}),
        ("read_note", {"name": "nope"}),
    ], forbidden_tools=["delete_note"])
    got = [(c.tool, c.status, c.kind) for c in record.calls]
    assert got == [("write_note", "invalid_arguments", "write"), ("write_note", "invalid_arguments", "write"),
                   ("write_note", "denied", "write"), ("delete_note", "forbidden", "write"),
                   ("list_notes", "ok", "read"), ("write_note", "ok", "write"), ("read_note", "tool_error", "read")]
    assert record.calls[0].error == "invalid arguments: text: '' should be non-empty"
    assert "Additional properties are not allowed ('extra' was unexpected)" in record.calls[1].error
    assert record.calls[2].error == "permission denied: note locked-plans is locked for ana"  # {identity} reached it
    assert record.calls[4].result == ["groceries", "todo"]  # the SDK's {"result": [...]} wrapper undone
    assert record.calls[5].result == {"name": "plans", "bytes": 8} and record.calls[5].committed
    assert record.calls[6].error == "no note named nope"
    changed = {c["path"]: c["kind"] for c in record.files["changes"]}
    assert changed == {"notes/plans.txt": "added"}  # no empty note: invalid arguments never reached the server
    [log] = record.upstreams
    assert log.server == "notes" and "notes server (normal) on" in log.stderr and log.failed_to_start is None


def test_allowed_tools_apply_to_upstream_tools(notes: Domain) -> None:
    record = trial(notes, [("write_note", {"name": "a", "text": "b"}), ("read_note", {"name": "todo"})],
                   allowed_tools=["read_note"])
    assert [c.status for c in record.calls] == ["not_allowed", "ok"]
    assert record.files["changes"] == []


# --- faults: the same through the proxy as in process --------------------------------------------------------


def _note(ctx: ToolContext, name: str) -> Path:
    return Path(ctx.world.workspace.root) / "notes" / f"{name}.txt"


@tool(kind="read")
def list_notes(ctx: ToolContext) -> list:
    """Names of every note, sorted."""
    return sorted(p.stem for p in _note(ctx, "x").parent.glob("*.txt"))


@tool(kind="read")
def read_note(ctx: ToolContext, name: str) -> str:
    """The text of one note.

    Args:
        name: The note's name.
    """
    if not _note(ctx, name).exists():
        raise ToolFailure(f"no note named {name}")
    return _note(ctx, name).read_text()


@tool(kind="write", idempotent=True)
def write_note(ctx: ToolContext, name: str, text: str) -> dict:
    """Create or replace a note.

    Args:
        name: The note's name.
        text: Its text.
    """
    _note(ctx, name).write_text(text)
    return {"name": name, "bytes": len(text)}


@tool(kind="write")
def delete_note(ctx: ToolContext, name: str) -> dict:
    """Delete a note.

    Args:
        name: The note's name.
    """
    if not _note(ctx, name).exists():
        raise ToolFailure(f"no note named {name}")
    _note(ctx, name).unlink()
    return {"deleted": name}


FAULTS = [
    {"tool": "read_note", "kind": "error", "on_call": 1},
    {"tool": "read_note", "kind": "latency", "on_call": 2, "seconds": 0.01},
    {"tool": "write_note", "kind": "drop_response", "on_call": 1, "seconds": 30},
    {"tool": "write_note", "kind": "malformed", "on_call": 2, "field": "bytes", "value": "{value} bytes"},
    {"tool": "delete_note", "kind": "timeout", "on_call": 1, "seconds": 20},
    {"tool": "list_notes", "kind": "error", "on_call": 1, "times": 2, "message": "error: index rebuilding"},
]
FAULTED_CALLS = [("read_note", {"name": "todo"}), ("read_note", {"name": "todo"}),
                 ("write_note", {"name": "a", "text": "first"}), ("write_note", {"name": "b", "text": "second"}),
                 ("delete_note", {"name": "todo"}), ("list_notes", {}), ("list_notes", {}), ("list_notes", {}),
                 ("delete_note", {"name": "groceries"})]


def test_every_fault_kind_is_observed_through_the_proxy_exactly_as_in_process(notes: Domain) -> None:
    native = Domain("notebook", workspace=NOTES_WS, policy="", tools=[list_notes, read_note, write_note, delete_note])
    proxied, local = (trial(d, FAULTED_CALLS, faults=FAULTS) for d in (notes, native))

    def seen(record: object) -> list[tuple[object, ...]]:
        return [(c.tool, c.status, c.error, c.result, c.hidden_result, c.committed, c.fault, c.fault_kind, c.kind)
                for c in record.calls]  # type: ignore[attr-defined]

    assert seen(proxied) == seen(local)
    assert [c.status for c in proxied.calls] == ["fault", "ok", "fault", "ok", "fault", "fault", "fault", "ok", "ok"]
    dropped = proxied.calls[2]
    assert dropped.committed and dropped.result is None and dropped.hidden_result == {"name": "a", "bytes": 5}
    assert proxied.calls[3].result == {"name": "b", "bytes": "6 bytes"}
    assert proxied.calls[7].result == ["a", "b", "groceries", "todo"]  # the dropped write happened; the timed-out delete did not

    def files(record: object) -> dict[str, str]:
        return {c["path"]: c["kind"] for c in record.files["changes"]}  # type: ignore[attr-defined]

    assert files(proxied) == files(local) == {"notes/a.txt": "added", "notes/b.txt": "added",
                                             "notes/groceries.txt": "removed"}


def test_record_is_json_and_keeps_the_servers_log(notes: Domain) -> None:
    record = trial(notes, [("list_notes", {})])
    data = json.loads(record.model_dump_json())
    assert data["upstreams"][0]["server"] == "notes" and data["upstreams"][0]["start_ms"] > 0
    assert record.outcome == "pass" and case().id == record.case_id


def test_an_http_server_is_started_per_trial_on_a_free_port() -> None:
    from passhat.upstream import Upstream
    from tests.upstream.conftest import NOTES_SERVER

    http = Upstream("http://127.0.0.1:{port}/mcp", name="notes",
                    start=f"{{python}} {NOTES_SERVER} {{workspace}} --http {{port}}", env={"NOTES_IDENTITY": "{identity}"})
    domain = Domain("notebook", workspace=NOTES_WS, policy="", tools=[], mcp=http)
    assert domain.tools["read_note"].kind == "read"
    record = trial(domain, [("write_note", {"name": "locked-x", "text": "y"}), ("write_note", {"name": "x", "text": "y"}),
                            ("list_notes", {})], faults=[{"tool": "list_notes", "kind": "drop_response"}])
    assert [c.status for c in record.calls] == ["denied", "ok", "fault"]
    assert record.calls[2].hidden_result == ["groceries", "todo", "x"]
    [log] = record.upstreams
    assert log.target.startswith("http://127.0.0.1:") and "POST /mcp" in log.stderr  # its access log, kept


def test_a_shared_http_server_is_started_once_and_told_each_trials_world_in_headers() -> None:
    from passhat.upstream import Upstream
    from passhat.upstream.shared import _SERVERS
    from tests.upstream.conftest import NOTES_SERVER

    shared = Upstream("http://127.0.0.1:{port}/mcp", name="notes-shared", shared=True,
                      start=f"{{python}} {NOTES_SERVER} /nonexistent --http {{port}}",
                      headers={"X-Notes-Root": "{workspace}", "X-Notes-Identity": "{identity}"})
    domain = Domain("notebook", workspace=NOTES_WS, policy="", tools=[], mcp=shared)
    first, second = (trial(domain, [("write_note", {"name": f"n{i}", "text": "y"}), ("list_notes", {}),
                                    ("write_note", {"name": "locked-x", "text": "y"})]) for i in (1, 2))
    assert first.calls[1].result == ["groceries", "n1", "todo"] and second.calls[1].result == ["groceries", "n2", "todo"]
    assert first.calls[2].status == second.calls[2].status == "denied"
    [server] = [s for key, s in _SERVERS.items() if key[0] == "notes-shared"]  # one process served both trials
    assert first.upstreams[0].shared_stderr == second.upstreams[0].shared_stderr == str(server.stderr_path)
    with pytest.raises(DomainError, match=r"shared=True: the start command is run once for every trial, so it "
                                          r"cannot use \{workspace\}"):
        Upstream("http://127.0.0.1:{port}/mcp", shared=True, start="{python} s.py {workspace} --http {port}")
