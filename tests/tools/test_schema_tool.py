"""Tools from a name, a JSON Schema and a callable (passhat.tools.schema_tool), and @tool keeping its function."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from passhat.errors import DomainError
from passhat.tools import SchemaTool, ToolBoundary, ToolContext, ToolFailure, schema_tool
from passhat.world import World

NOTE_SCHEMA = {"type": "object", "required": ["title"], "additionalProperties": False,
               "properties": {"title": {"type": "string", "minLength": 1},
                              "priority": {"type": "integer", "enum": [1, 2, 3]},
                              "labels": {"type": "array", "items": {"type": "string"}}}}


def add_note(ctx: ToolContext, title: str, priority: int = 1, labels: list[str] | None = None) -> dict[str, Any]:
    if title == "boom":
        raise ToolFailure("the notes service refused it")
    note_id = ctx.new_id("N-", 4)
    ctx.db.execute("INSERT INTO notes (id, owner, title, priority) VALUES (?, ?, ?, ?)",
                   (note_id, ctx.identity, title, priority))
    return {"id": note_id, "labels": labels or []}


async def count_notes(ctx: ToolContext) -> int:
    await asyncio.sleep(0)
    return int(ctx.db.execute("SELECT COUNT(*) FROM notes").fetchone()[0])


@pytest.fixture
def boundary(notes_domain: Any) -> Any:
    world = World.restore(notes_domain.image("default"), 1)
    tools = [schema_tool("add_note_v2", NOTE_SCHEMA, add_note, kind="write", description="Add a note."),
             schema_tool("count_notes", {"type": "object", "properties": {}}, count_notes, kind="read",
                         description="How many notes there are.")]
    yield ToolBoundary(tools, ToolContext(world, identity="alice"))
    world.close()


def call(b: ToolBoundary, name: str, args: Any) -> Any:
    return asyncio.run(b.call(name, args))


def test_arguments_that_fit_reach_the_callable_spread_and_the_write_is_seen(boundary: ToolBoundary) -> None:
    before = call(boundary, "count_notes", {}).result
    rec = call(boundary, "add_note_v2", {"title": "call mom", "priority": 2, "labels": ["family"]})
    assert rec.status == "ok" and rec.result["labels"] == ["family"] and rec.result["id"].startswith("N-")
    assert call(boundary, "count_notes", {}).result == before + 1  # an async body too


@pytest.mark.parametrize(("args", "problem"), [
    ({"priority": 2}, "'title' is a required property"),
    ({"title": "x", "priority": 7}, "priority: 7 is not one of [1, 2, 3]"),
    ({"title": "x", "labels": [1]}, "labels.0: 1 is not of type 'string'"),
    ({"title": "x", "colour": "red"}, "Additional properties are not allowed"),
])
def test_arguments_that_do_not_fit_never_reach_it(boundary: ToolBoundary, args: dict[str, Any], problem: str) -> None:
    before = call(boundary, "count_notes", {}).result
    rec = call(boundary, "add_note_v2", args)
    assert rec.status == "invalid_arguments" and problem in rec.error
    assert call(boundary, "count_notes", {}).result == before


def test_a_failure_is_the_tools_and_undoes_nothing_it_did_not_do(boundary: ToolBoundary) -> None:
    rec = call(boundary, "add_note_v2", {"title": "boom"})
    assert rec.status == "tool_error" and "refused" in rec.error


def test_the_agent_sees_the_schema_as_given() -> None:
    made = schema_tool("add_note_v2", NOTE_SCHEMA, add_note, kind="write", description="Add a note.")
    assert isinstance(made, SchemaTool) and made.parameters == NOTE_SCHEMA
    assert made.spec() == {"name": "add_note_v2", "description": "Add a note.", "parameters": NOTE_SCHEMA,
                           "kind": "write"}


@pytest.mark.parametrize(("schema", "message"), [
    ({"type": "array"}, "tool 'bad': parameters: type is 'array'; tool arguments are an object"),
    ({"type": "object", "properties": {"n": {"type": "integr"}}}, "is not a valid JSON Schema at properties/n/type"),
    ({"type": "object", "properties": {"n": {"$ref": "#/$defs/missing"}}}, "tool 'bad': parameters: "),
    ("not a schema", "is str, not a JSON Schema object"),
])
def test_a_schema_that_is_not_usable_is_bad_input_naming_the_tool(schema: Any, message: str) -> None:
    with pytest.raises(DomainError, match="tool 'bad'") as err:
        schema_tool("bad", schema, add_note, kind="write", description="x")
    assert message in str(err.value)


def test_a_check_of_ones_own_replaces_the_json_schema_check(boundary: ToolBoundary, notes_domain: Any) -> None:
    lenient = schema_tool("add_any", {"type": "object"}, add_note, kind="write", description="Add.",
                          check=lambda args: [] if "title" in args else [(("title",), "needed")])
    world = World.restore(notes_domain.image("default"), 1)
    b = ToolBoundary([lenient], ToolContext(world, identity="bob"))
    assert call(b, "add_any", {"title": "t"}).status == "ok"
    assert "title: needed" in call(b, "add_any", {}).error
    world.close()


def test_a_declared_tool_is_still_its_function(notes_domain: Any) -> None:
    """@tool returns a Tool of the function's type: calling it calls the function (outside the boundary)."""
    tool = notes_domain.tool_list()[0]
    world = World.restore(notes_domain.image("default"), 1)
    assert tool(ToolContext(world, identity="alice")) == tool.func(ToolContext(world, identity="alice"))
    world.close()
