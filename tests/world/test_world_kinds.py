"""Every world kind behind one seam: the same domain, tools, cases and agent on an in-memory SQLite image,
a SQLite file and a PostgreSQL database give the same diffs and the same verdicts (docs/design/019)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from passhat.cases import Case
from passhat.domain import Domain
from passhat.episode import Episode
from passhat.regrade.record import regrade_record
from passhat.runner.trial import run_trial
from passhat.tools import ToolContext, tool
from passhat.worlds import Postgres, SqliteFile

SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price DOUBLE PRECISION, note TEXT);
CREATE TABLE tags (item_id INTEGER, tag TEXT, PRIMARY KEY (item_id, tag));
CREATE TABLE events (msg TEXT, n INTEGER);
"""
FIXTURE = """
now: "2026-03-01T10:00:00"
tables:
  items:
    - {id: 1, name: lamp, price: 25.0, note: null}
    - {id: 2, name: desk, price: 120.5, note: oak}
    - {id: 3, name: chair, price: 49.99, note: null}
  tags:
    - {item_id: 1, tag: light}
  events:
    - {msg: opened, n: 1}
"""


@tool(kind="write")
def reprice(ctx: ToolContext, item_id: int, price: float) -> dict[str, Any]:
    """Set an item's price and log it.

    Args:
        item_id: The item.
        price: The new price.
    """
    cur = ctx.db.execute("UPDATE items SET price = ? WHERE id = ?", (price, item_id))
    if cur.rowcount != 1:
        ctx.fail(f"no item {item_id}")
    ctx.db.execute("INSERT INTO events VALUES (?, ?)", (f"repriced {item_id} at {ctx.now()}", item_id))
    return {"id": item_id, "price": price}


@tool(kind="write")
def add_item(ctx: ToolContext, name: str, tag: str) -> dict[str, Any]:
    """Add an item with one tag.

    Args:
        name: Its name.
        tag: A tag.
    """
    (top,) = ctx.db.execute("SELECT MAX(id) FROM items").fetchone()
    ctx.db.execute("INSERT INTO items (id, name, price, note) VALUES (?, ?, ?, ?)", (top + 1, name, 0, None))
    ctx.db.execute("INSERT INTO tags VALUES (?, ?)", (top + 1, tag))
    return {"id": top + 1}


@tool(kind="write")
def remove_item(ctx: ToolContext, item_id: int) -> dict[str, Any]:
    """Delete an item and its tags.

    Args:
        item_id: The item.
    """
    ctx.db.execute("DELETE FROM tags WHERE item_id = ?", (item_id,))
    ctx.db.execute("DELETE FROM items WHERE id = ?", (item_id,))
    return {"removed": item_id}


@tool(kind="write")
def half_done(ctx: ToolContext, item_id: int) -> dict[str, Any]:
    """Writes, then fails: the call must leave nothing behind.

    Args:
        item_id: The item.
    """
    ctx.db.execute("UPDATE items SET name = 'broken' WHERE id = ?", (item_id,))
    ctx.db.execute("INSERT INTO events VALUES ('half', 0)")
    ctx.fail("the warehouse is closed")


@tool(kind="read")
def get_item(ctx: ToolContext, item_id: int) -> dict[str, Any] | None:
    """Read one item.

    Args:
        item_id: The item.
    """
    row = ctx.db.execute("SELECT * FROM items WHERE id = ?", (item_id,)).fetchone()
    return dict(row) if row is not None else None


TOOLS = [reprice, add_item, remove_item, half_done, get_item]
KINDS = ["sqlite", "sqlite_file", "postgres"]

CASE = Case.model_validate({
    "id": "shop", "domain": "shop", "instruction": "Reprice the lamp, add a rug, drop the chair.",
    "reference": [{"tool": "reprice", "args": {"item_id": 1, "price": 30}},
                  {"tool": "add_item", "args": {"name": "rug", "tag": "floor"}},
                  {"tool": "remove_item", "args": {"item_id": 3}}],
    "assertions": [
        {"row_count": {"table": "items", "equals": 3}},
        {"row_count": {"table": "items", "where": {"note": None}, "equals": 2}},
        {"field_equals": {"table": "items", "where": {"id": "1"}, "field": "price", "equals": 30}},
        {"field_equals": {"table": "items", "where": {"id": 4}, "field": "name",
                          "equals": {"sql": "SELECT 'rug'"}}},
        {"sql": {"query": 'SELECT COUNT(*) FROM "tags" WHERE "tag" = \'floor\'', "expect": 1}},
        {"net_change": {"table": "items", "column": "price", "equals": -44.99}},
        {"unchanged_except": {"tables": ["events", "tags"], "rows": [
            {"table": "items", "where": {"id": 1}, "columns": ["price"]},
            {"table": "items", "where": {"id": 4}}, {"table": "items", "where": {"id": 3}}]}},
        {"expect_state": {"reference": True, "ignore": {"events": ["msg"]}}},
        {"expect_state": {"table": "items", "rows": [{"id": 1, "price": 30}], "absent": [{"id": 3}]}},
    ],
})


def make_domain(kind: str, tmp: Path) -> Domain:
    data = tmp / "fixture.yaml"
    data.write_text(FIXTURE)
    source: Any = {"sqlite": data, "sqlite_file": SqliteFile(data=data),
                   "postgres": Postgres(schema=SCHEMA, data=data)}[kind]
    return Domain("shop", schema=SCHEMA, fixtures={"default": source}, policy="", tools=TOOLS)


@pytest.fixture(scope="module")
def domains(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> dict[str, Domain]:
    request.getfixturevalue("pg")  # PostgreSQL must be there (or the test fails saying what to install)
    out = {}
    for kind in KINDS:
        folder = tmp_path_factory.mktemp(kind)
        out[kind] = make_domain(kind, folder)
    yield out
    for d in out.values():
        d.close_workspaces()


async def careful(episode: Episode) -> str:
    await episode.call("get_item", {"item_id": 1})
    await episode.call("half_done", {"item_id": 2})  # fails: undone whatever the kind
    await episode.call("reprice", {"item_id": 1, "price": 30})
    await episode.call("add_item", {"name": "rug", "tag": "floor"})
    await episode.call("remove_item", {"item_id": 3})
    return "done"


def trial(domain: Domain, seed: int = 5) -> Any:
    return asyncio.run(run_trial(CASE, domain, careful, 0, seed))


def comparable(changes: list[dict[str, Any]], table: str) -> list[str]:
    """A table's changes in a canonical order (kinds list them in their own), keys left out where a table
    has none (a SQLite rowid, a PostgreSQL row hash)."""
    import json

    return sorted(json.dumps({k: v for k, v in c.items() if k != "key" or table != "events"}, sort_keys=True)
                  for c in changes)


def test_the_same_trial_gives_the_same_diff_and_verdicts_on_every_kind(domains: dict[str, Domain]) -> None:
    records = {kind: trial(d) for kind, d in domains.items()}
    for kind, rec in records.items():
        assert rec.outcome == "pass", (kind, rec.failed_grades())
        assert [c.status for c in rec.calls] == ["ok", "tool_error", "ok", "ok", "ok"]
    reference = records["sqlite"].diff
    assert set(reference) == {"items", "tags", "events"}
    for kind in ("sqlite_file", "postgres"):
        diff = records[kind].diff
        for table in reference:  # keyless `events` rows have kind-specific keys (rowid, a row hash)
            assert comparable(diff[table], table) == comparable(reference[table], table), (kind, table)
    verdicts = {kind: [(g.name, g.passed, g.reason if g.grader == "state" else "") for g in rec.grades]
                for kind, rec in records.items()}  # (the limits grade quotes the trial's own duration)
    assert verdicts["sqlite"] == verdicts["sqlite_file"] == verdicts["postgres"]


def test_a_failed_call_leaves_nothing_on_every_kind(domains: dict[str, Domain]) -> None:
    for kind, domain in domains.items():
        world = domain.restore("default", 1)
        try:
            from passhat.tools import ToolBoundary

            boundary = ToolBoundary(TOOLS, ToolContext(world))
            rec = asyncio.run(boundary.call("half_done", {"item_id": 2}))
            assert rec.status == "tool_error"
            assert len(world.diff()) == 0, kind
            assert world.query("SELECT name FROM items WHERE id = ?", (2,)) == [("desk",)], kind
        finally:
            world.close()


def test_reach_names_only_what_another_process_can_open(domains: dict[str, Domain]) -> None:
    reached = {}
    for kind, domain in domains.items():
        world = domain.restore("default", 1)
        try:
            reached[kind] = world.reach()
        finally:
            world.close()
    assert reached["sqlite"] == {}
    assert set(reached["sqlite_file"]) == {"sqlite_path"} and set(reached["postgres"]) == {"database_url"}
    path = reached["sqlite_file"]["sqlite_path"]
    assert not Path(path).exists(), "a discarded copy's file is gone"


def test_a_server_writing_through_the_placeholder_is_diffed(domains: dict[str, Domain]) -> None:
    """What a process of its own writes (an MCP server given {sqlite_path} or {database_url}) is in the diff."""
    import psycopg

    for kind in ("sqlite_file", "postgres"):
        world = domains[kind].restore("default", 1)
        try:
            target = world.reach()
            if kind == "sqlite_file":
                with sqlite3.connect(target["sqlite_path"]) as other:
                    other.execute("UPDATE items SET note = 'by server' WHERE id = 3")
            else:
                with psycopg.connect(target["database_url"], autocommit=True) as other:
                    other.execute("UPDATE items SET note = 'by server' WHERE id = 3")
            changes = world.diff().rows("items")
            assert [(c.key, c.changed_fields, c.after["note"]) for c in changes] == [((3,), ["note"], "by server")], kind
        finally:
            world.close()


def test_regrading_rebuilds_the_final_state_on_every_kind(domains: dict[str, Domain]) -> None:
    for kind, domain in domains.items():
        rec = trial(domain, seed=9)
        again = regrade_record(rec, CASE, domain)
        assert again.outcome == "pass" and again.grades == rec.grades, kind


def test_fixture_hashes_and_table_shapes_agree(domains: dict[str, Domain]) -> None:
    shapes = {}
    for kind, domain in domains.items():
        with domain.reading("default") as reader:
            assert reader is not None
            shapes[kind] = {n: (t.columns, t.key) for n, t in reader.tables.items()}
            assert reader.query('SELECT COUNT(*) FROM "items" WHERE "note" IS ?', (None,)) == [(2,)], kind
            assert reader.compile_error("SELECT nope FROM items") is not None
            assert reader.compile_error("SELECT name FROM items") is None
        assert len(domain.fixture_hash("default")) == 64
    assert shapes["sqlite"] == shapes["sqlite_file"] == shapes["postgres"]
    assert shapes["postgres"]["events"][1] == ("rowid",)  # no primary key, as in SQLite
