"""World copies within a memory budget (issue 12 item 7): beyond it they are files, and every trial
still starts from exactly the fixture, whichever kind of copy it got and however many run at once."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from passhat.tools import ToolContext, tool
from passhat.world import FixtureImage, World
from passhat.world.fingerprint import state_hash
from passhat.world.image import LOG_TABLE, TRIGGER_PREFIX

SCHEMA = "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL);"


def load(conn: sqlite3.Connection) -> None:
    conn.executemany("INSERT INTO items VALUES (?, ?, ?)", [(i, f"item {i}", i * 1.5) for i in range(200)])


def state(conn: sqlite3.Connection) -> str:
    return state_hash(conn, datetime(2026, 1, 1), skip_table=LOG_TABLE, skip_trigger_prefix=TRIGGER_PREFIX)


def small_image(copies_in_memory: int) -> FixtureImage:
    probe = FixtureImage.build("probe", SCHEMA, load, datetime(2026, 1, 1))
    return FixtureImage.build("t", SCHEMA, load, datetime(2026, 1, 1), memory_budget=copies_in_memory * probe.size_bytes)


def test_copies_beyond_the_memory_budget_are_files_that_start_identical_and_stay_apart() -> None:
    image = small_image(copies_in_memory=2)
    fixture = image.content_hash()  # takes one pooled copy and returns it
    worlds = [World.restore(image, i) for i in range(5)]
    assert (image.copies.in_memory, image.copies.on_disk) == (2, 3)
    assert all(state(w.db) == fixture for w in worlds)
    worlds[3].db.execute("DELETE FROM items WHERE id < 100")  # a file-backed world
    worlds[0].db.execute("UPDATE items SET price = -1")  # an in-memory one
    assert all(state(w.db) == fixture for w in (worlds[1], worlds[2], worlds[4]))
    assert [len(w.diff()) for w in worlds] == [200, 0, 0, 100, 0]
    for w in worlds:
        w.close()
    again = [World.restore(image, i) for i in range(5)]
    assert image.copies.made == 5  # pooled and reset, not copied again
    assert all(state(w.db) == fixture and len(w.diff()) == 0 for w in again)
    files = list(Path(image.copies._folder or ".").glob("world-*.sqlite"))
    assert len(files) == 3
    for w in again:
        w.close()
    image.close()
    assert (image.copies.in_memory, image.copies.on_disk) == (0, 0)
    assert not any(f.exists() for f in files)


def test_a_file_backed_world_whose_trial_commits_is_discarded_with_its_file() -> None:
    image = small_image(copies_in_memory=0)
    w = World.restore(image, 1)
    w.db.execute("DELETE FROM items")
    w.db.execute("COMMIT")  # a misbehaving tool escaping the trial savepoint
    w.close()
    assert image.copies.on_disk == 0
    fresh = World.restore(image, 2)
    assert fresh.query("SELECT COUNT(*) FROM items") == [(200,)]
    fresh.close()


def test_trials_start_from_identical_state_under_concurrency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from passhat.cases import Case, Suite
    from passhat.domain import Domain
    from passhat.runner import RunConfig, RunStore, execute
    from passhat.world import copies

    @tool(kind="read")
    def fingerprint(ctx: ToolContext) -> str:
        """Hash of every row."""
        rows = [tuple(r) for r in ctx.db.execute("SELECT * FROM items ORDER BY id")]
        return hashlib.sha256(repr(rows).encode()).hexdigest()

    @tool(kind="write")
    def vandalise(ctx: ToolContext, keep: int) -> str:
        """Delete and change rows.

        Args:
            keep: Rows with a smaller id survive.
        """
        ctx.db.execute("DELETE FROM items WHERE id >= ?", (keep,))
        ctx.db.execute("UPDATE items SET name = 'changed'")
        ctx.db.execute("INSERT INTO items VALUES (1000, 'new', 1)")
        return "done"

    seen: list[str] = []

    async def agent(episode: Any) -> str:
        seen.append((await episode.call("fingerprint", {})).content)
        await asyncio.sleep(0.01)  # every world alive at once
        await episode.call("vandalise", {"keep": len(seen)})
        return "vandalised"

    probe = FixtureImage.build("probe", SCHEMA, load, datetime(2026, 1, 1))
    monkeypatch.setattr(copies, "DEFAULT_MEMORY_BUDGET", 3 * probe.size_bytes)  # 3 in memory, the rest files
    domain = Domain("items", schema=SCHEMA, fixtures={"default": load}, policy="", tools=[fingerprint, vandalise])
    cases = [Case.model_validate({"id": f"c{i}", "domain": "items", "instruction": "go",
                                  "assertions": [{"kind": "row_count", "table": "items", "equals": 1000}]})
             for i in range(12)]
    suite = Suite("items", tmp_path, cases, {c.id: tmp_path / f"{c.id}.yaml" for c in cases}, {"items": domain})
    cfg = RunConfig(suite=suite, agent=agent, agent_spec="vandal", trials=2, concurrency=8, out=tmp_path / "run")
    asyncio.run(execute(cfg))
    image = domain.image("default")
    assert image.copies.on_disk > 0 and image.copies.in_memory == 3  # both kinds were used
    assert len(seen) == 24 and len(set(seen)) == 1
    with image.reading() as conn:
        assert conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 200
    assert all(r.outcome == "fail" and r.error is None for r in RunStore(tmp_path / "run").load())


def test_a_copy_read_for_checking_goes_back_to_the_pool_writable() -> None:
    """``reading()`` turns ``query_only`` on and leaves turning it off to ``release`` (its guard saw the pragma)."""
    image = small_image(copies_in_memory=1)
    with image.reading() as conn:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM items")
    again = image.acquire()
    assert again is conn  # the same pooled copy, now for a trial
    again.execute("DELETE FROM items WHERE id = 1")  # writable again
    image.release(again)
    with image.reading() as conn:
        assert conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 200  # and back in the fixture's state
