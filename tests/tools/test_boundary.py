"""The tool boundary: permissions, validation, faults, recording — and nothing crashes the run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from passhat.tools import Fault, ToolBoundary, ToolContext, tool
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


@tool(kind="write")
def add_then_raise(ctx: ToolContext, title: str, how: str) -> dict:
    """Write a note, then fail in the way ``how`` names.

    Args:
        title: Note title.
        how: "exception", "fail", "deny" or "ok".
    """
    ctx.db.execute("INSERT INTO notes (id, owner, title) VALUES (?, ?, ?)", (ctx.new_id("N-", 4), ctx.identity, title))
    ctx.db.execute("DELETE FROM audit")
    if how == "exception":
        raise KeyError("bug after the write")
    if how == "fail":
        ctx.fail("quota exceeded after the write")
    if how == "deny":
        ctx.deny("not yours, noticed after the write")
    return {"ok": True}


@tool(kind="write")
def grouped_then_raise(ctx: ToolContext, title: str, raise_after: bool) -> dict:
    """Write two notes in ``ctx.transaction()``, then maybe raise outside it.

    Args:
        title: Note title.
        raise_after: Raise once the transaction has completed.
    """
    with ctx.transaction() as db:
        for _ in range(2):
            db.execute("INSERT INTO notes (id, owner, title) VALUES (?, ?, ?)", (ctx.new_id("N-", 4), ctx.identity, title))
    if raise_after:
        raise RuntimeError("bug after the transaction")
    return {"ok": True}


@tool(kind="write")
async def add_slowly(ctx: ToolContext, title: str, fail: bool) -> dict:
    """Write a note, wait, then maybe fail.

    Args:
        title: Note title.
        fail: Fail after the wait.
    """
    ctx.db.execute("INSERT INTO notes (id, owner, title) VALUES (?, ?, ?)", (ctx.new_id("N-", 4), ctx.identity, title))
    await asyncio.sleep(0.01)
    if fail:
        ctx.fail("downstream refused")
    return {"ok": True}


@tool(kind="write")
def add_and_commit(ctx: ToolContext, title: str) -> dict:
    """A badly behaved tool: commits the trial's transaction, then raises.

    Args:
        title: Note title.
    """
    ctx.db.execute("INSERT INTO notes (id, owner, title) VALUES (?, ?, ?)", (ctx.new_id("N-", 4), ctx.identity, title))
    ctx.db.execute("COMMIT")
    raise RuntimeError("after commit")


@pytest.fixture
def atomic_boundary(notes_domain: Any) -> Any:
    def make(**kw: Any) -> tuple[ToolBoundary, World]:
        world = World.restore(notes_domain.image("default"), 1)
        tools = [*notes_domain.tool_list(), add_then_raise, grouped_then_raise, add_slowly, add_and_commit]
        return ToolBoundary(tools, ToolContext(world, identity="alice"), **kw), world

    return make


@pytest.mark.parametrize(("how", "status"), [("exception", "exception"), ("fail", "tool_error"), ("deny", "denied")])
def test_a_call_that_raises_fails_or_denies_leaves_no_write(atomic_boundary: Any, how: str, status: str) -> None:
    b, world = atomic_boundary()
    kept = call(b, "add_note", {"title": "before"})
    rec = call(b, "add_then_raise", {"title": "half", "how": how})
    assert rec.status == status and not rec.committed
    diff = world.diff()
    assert [c.after["title"] for c in diff.rows("notes")] == ["before"] and kept.ok
    assert diff.rows("audit") == [], "the delete before the error was rolled back too"
    assert world.db.execute("SELECT COUNT(*) FROM notes WHERE title = 'half'").fetchone()[0] == 0
    assert call(b, "add_then_raise", {"title": "whole", "how": "ok"}).ok
    assert {c.after["title"] for c in world.diff().rows("notes")} == {"before", "whole"}
    world.close()


def test_tool_transactions_nest_inside_the_call(atomic_boundary: Any) -> None:
    b, world = atomic_boundary()
    assert call(b, "grouped_then_raise", {"title": "t", "raise_after": False}).ok
    assert call(b, "grouped_then_raise", {"title": "u", "raise_after": True}).status == "exception"
    assert sorted(c.after["title"] for c in world.diff().rows("notes")) == ["t", "t"]
    world.close()


def test_drop_response_keeps_the_write_of_a_completed_call(atomic_boundary: Any) -> None:
    b, world = atomic_boundary(faults=[Fault(tool="add_then_raise", kind="drop_response")])
    rec = call(b, "add_then_raise", {"title": "lost answer", "how": "ok"})
    assert rec.status == "fault" and rec.committed
    assert [c.after["title"] for c in world.diff().rows("notes")] == ["lost answer"]
    world.close()


def test_concurrent_async_calls_stay_atomic(atomic_boundary: Any) -> None:
    b, world = atomic_boundary()

    async def both() -> list[Any]:
        return list(await asyncio.gather(b.call("add_slowly", {"title": "fails", "fail": True}),
                                         b.call("add_slowly", {"title": "stays", "fail": False})))

    failed, ok = asyncio.run(both())
    assert failed.status == "tool_error" and ok.ok
    assert [c.after["title"] for c in world.diff().rows("notes")] == ["stays"]
    world.close()


def test_a_plain_tool_called_during_an_async_one_waits_for_it(atomic_boundary: Any) -> None:
    # plain functions skip the lock when it is free; while an async call holds it, one must wait, or its write
    # would land inside that call's savepoint and go with the async call's failure
    b, world = atomic_boundary()

    async def both() -> list[Any]:
        return list(await asyncio.gather(b.call("add_slowly", {"title": "fails", "fail": True}),
                                         b.call("add_note", {"title": "plain"})))

    failed, plain = asyncio.run(both())
    assert failed.status == "tool_error" and plain.ok
    assert [c.after["title"] for c in world.diff().rows("notes")] == ["plain"]
    world.close()


def test_a_tool_that_commits_does_not_crash_the_boundary(atomic_boundary: Any, notes_domain: Any) -> None:
    b, world = atomic_boundary()
    assert call(b, "add_and_commit", {"title": "escaped"}).status == "exception"
    assert call(b, "add_note", {"title": "next"}).ok
    world.close()  # the connection escaped its savepoint: discarded, never pooled
    fresh = World.restore(notes_domain.image("default"), 2)
    assert fresh.db.execute("SELECT COUNT(*) FROM notes WHERE title IN ('escaped', 'next')").fetchone()[0] == 0
    fresh.close()


def test_a_failed_call_undoes_only_itself_after_many_kept_ones(atomic_boundary: Any) -> None:
    """Kept calls leave their savepoints open (sqlite_kind.MAX_STACKED at most): a failing call still goes back
    to its own, before and past that bound, and after a call that grouped its writes in a transaction."""
    from passhat.world.sqlite_kind import MAX_STACKED

    b, world = atomic_boundary()
    titles = []
    for i in range(MAX_STACKED + 6):
        titles.append(f"n{i}")
        assert call(b, "add_note", {"title": titles[-1]}).ok
        if i in (2, MAX_STACKED - 1, MAX_STACKED + 3):
            assert call(b, "add_then_raise", {"title": "half", "how": "exception"}).status == "exception"
            assert call(b, "grouped_then_raise", {"title": "g", "raise_after": True}).status == "exception"
            assert call(b, "grouped_then_raise", {"title": f"g{i}", "raise_after": False}).ok
            titles += [f"g{i}", f"g{i}"]
    assert sorted(c.after["title"] for c in world.diff().rows("notes")) == sorted(titles)
    assert world.diff().rows("audit") == []
    world.close()


def test_a_record_says_who_called_only_when_it_was_the_user() -> None:
    # records of agent-only trials have no "by" (they are byte for byte what they were before dual control)
    from pydantic_core import to_json

    from passhat.tools import ToolCall

    agent, user = (ToolCall(step=1, tool="t", by=by, arguments={}, status="ok") for by in ("agent", "user"))
    assert b'"by"' not in to_json(agent) and "by" not in agent.model_dump(mode="json") and "by" not in agent.model_dump()
    assert b'"by":"user"' in to_json([agent, user]) and user.model_dump()["by"] == "user"
    assert ToolCall.model_validate_json(to_json(agent)).by == "agent"
