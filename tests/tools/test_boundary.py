"""The tool boundary: permissions, validation, faults, recording — and nothing crashes the run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from passhat.tools import Fault, ToolBoundary, ToolContext
from passhat.world import World


@pytest.fixture
def boundary_for(notes_domain: Any) -> Any:
    def make(**kw: Any) -> tuple[ToolBoundary, World]:
        world = World.restore(notes_domain.image("default"), 1)
        return ToolBoundary(notes_domain.tool_list(), ToolContext(world, identity="alice"), **kw), world

    return make


def call(b: ToolBoundary, name: str, args: Any = None) -> Any:
    return asyncio.run(b.call(name, {} if args is None else args))


def test_errors_come_back_as_statuses(boundary_for: Any) -> None:
    b, _ = boundary_for()
    assert call(b, "fly", {}).status == "unknown_tool"
    bad = call(b, "add_note", {"title": 5})
    assert bad.status == "invalid_arguments" and "title" in bad.error
    assert call(b, "add_note", [1, 2]).status == "invalid_arguments"
    assert call(b, "get_note", {"note_id": "N-2"}).status == "denied"
    assert call(b, "get_note", {"note_id": "N-9"}).status == "tool_error"
    boom = call(b, "broken")
    assert boom.status == "exception" and "bug in tool" in boom.error and "RuntimeError" in boom.traceback
    assert [c.step for c in b.calls] == [1, 2, 3, 4, 5, 6]


def test_allowed_and_forbidden_tools_are_enforced_at_the_tool_layer(boundary_for: Any) -> None:
    b, world = boundary_for(allowed=["list_notes", "wipe_audit"], forbidden=["add_note"])
    assert call(b, "add_note", {"title": "x"}).status == "forbidden"
    assert call(b, "get_note", {"note_id": "N-1"}).status == "not_allowed"
    assert len(world.diff()) == 0


def test_drop_response_commits_the_write_but_the_agent_sees_a_timeout(boundary_for: Any) -> None:
    b, world = boundary_for(faults=[Fault(tool="add_note", kind="drop_response")])
    first = call(b, "add_note", {"title": "x"})
    assert first.status == "fault" and first.committed and first.result is None
    assert "timeout" in first.error and first.hidden_result["id"].startswith("N-")
    second = call(b, "add_note", {"title": "x"})
    assert second.ok and second.fault is None
    assert len(world.diff().rows("notes")) == 2


def test_timeout_and_error_do_not_run_the_tool(boundary_for: Any) -> None:
    b, world = boundary_for(faults=[Fault(tool="add_note", kind="timeout", times=2),
                                    Fault(tool="list_notes", kind="error", message="503")])
    assert call(b, "add_note", {"title": "x"}).status == "fault"
    assert call(b, "add_note", {"title": "x"}).status == "fault"
    assert call(b, "add_note", {"title": "x"}).ok
    err = call(b, "list_notes")
    assert err.status == "fault" and err.error == "503" and not err.committed
    assert len(world.diff()) == 1


def test_malformed_corrupts_one_field_in_every_row(boundary_for: Any) -> None:
    b, _ = boundary_for(faults=[Fault(tool="list_notes", kind="malformed", field="body", value="{value}元",
                                      on_call=2)])
    assert call(b, "list_notes").result[0]["body"] == "milk"
    rec = call(b, "list_notes")
    assert rec.ok and rec.result[0]["body"] == "milk元" and rec.hidden_result[0]["body"] == "milk"


def test_latency_delays_and_advances_the_clock(boundary_for: Any) -> None:
    b, world = boundary_for(faults=[Fault(tool="list_notes", kind="latency", seconds=0.01)])
    before = world.clock.now()
    assert call(b, "list_notes").ok
    assert (world.clock.now() - before).total_seconds() == pytest.approx(1.01)
