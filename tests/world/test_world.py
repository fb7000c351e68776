"""Worlds: reset to the fixture for every trial, and a row-level diff by primary key."""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime

import pytest

from passhat.seeding import derive_seed
from passhat.world import FixtureImage, World
from passhat.world.diff import same_value

SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL);
CREATE TABLE tags (item_id INTEGER, tag TEXT, PRIMARY KEY (item_id, tag));
CREATE TABLE log (msg TEXT);
"""


def load(conn: sqlite3.Connection) -> None:
    conn.executemany("INSERT INTO items VALUES (?, ?, ?)", [(1, "a", 25.0), (2, "b", 10.0), (3, "c", 1.5)])
    conn.execute("INSERT INTO tags VALUES (1, 'x')")
    conn.execute("INSERT INTO log VALUES ('start')")


@pytest.fixture
def image() -> FixtureImage:
    return FixtureImage.build("t", SCHEMA, load, datetime(2026, 1, 1))


def test_each_world_starts_from_the_fixture(image: FixtureImage) -> None:
    w1 = World.restore(image, 1)
    w1.db.execute("DELETE FROM items")
    w2 = World.restore(image, 1)
    assert w2.db.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 3
    assert len(w2.diff()) == 0


def test_diff_reports_inserted_updated_deleted_by_key(image: FixtureImage) -> None:
    w = World.restore(image, 1)
    w.db.execute("INSERT INTO items VALUES (4, 'd', 2.0)")
    w.db.execute("UPDATE items SET price = 26 WHERE id = 1")
    w.db.execute("DELETE FROM items WHERE id = 2")
    w.db.execute("INSERT INTO tags VALUES (1, 'y')")
    d = w.diff()
    kinds = {(c.table, c.key): c.kind for c in d.rows()}
    assert kinds == {("items", (4,)): "inserted", ("items", (1,)): "updated", ("items", (2,)): "deleted",
                     ("tags", (1, "y")): "inserted"}
    upd = next(c for c in d.rows("items") if c.kind == "updated")
    assert upd.before == {"id": 1, "name": "a", "price": 25.0} and upd.changed_fields == ["price"]


def test_changes_that_are_undone_or_numerically_equal_are_not_differences(image: FixtureImage) -> None:
    w = World.restore(image, 1)
    w.db.execute("INSERT INTO items VALUES (9, 'tmp', 1)")
    w.db.execute("DELETE FROM items WHERE id = 9")
    w.db.execute("UPDATE items SET price = 25 WHERE id = 1")  # 25 == 25.0
    w.db.execute("UPDATE items SET name = 'zz' WHERE id = 3")
    w.db.execute("UPDATE items SET name = 'c' WHERE id = 3")
    assert len(w.diff()) == 0


def test_primary_key_change_is_a_delete_and_an_insert(image: FixtureImage) -> None:
    w = World.restore(image, 1)
    w.db.execute("UPDATE items SET id = 7 WHERE id = 3")
    kinds = sorted((c.key, c.kind) for c in w.diff().rows("items"))
    assert kinds == [((3,), "deleted"), ((7,), "inserted")]


def test_tables_without_primary_key_are_tracked_by_rowid(image: FixtureImage) -> None:
    assert image.tables["log"].key == ("rowid",)
    w = World.restore(image, 1)
    w.db.execute("INSERT INTO log VALUES ('agent was here')")
    assert [c.kind for c in w.diff().rows("log")] == ["inserted"]


def test_query_is_read_only(image: FixtureImage) -> None:
    w = World.restore(image, 1)
    with pytest.raises(sqlite3.OperationalError):
        w.query("DELETE FROM items")
    assert w.query("SELECT COUNT(*) FROM items") == [(3,)]
    w.db.execute("DELETE FROM items WHERE id = 1")  # the world itself stays writable afterwards


def test_ids_and_clock_are_deterministic_per_seed(image: FixtureImage) -> None:
    a, b, c = World.restore(image, 5), World.restore(image, 5), World.restore(image, 6)
    assert [a.ids.next("R-") for _ in range(3)] == [b.ids.next("R-") for _ in range(3)]
    assert a.ids.next("R-") != c.ids.next("R-")
    first = a.ids.next("T-", 4)
    assert len(first) == 6 and a.ids.next("T-", 4) != first
    a.clock.tick()
    assert a.clock.iso() == "2026-01-01T00:00:01"


def test_the_trial_rng_is_seeded_by_the_trial_seed_whenever_it_is_first_used(image: FixtureImage) -> None:
    a, b, c = World.restore(image, 5), World.restore(image, 5), World.restore(image, 6)
    b.ids.next("R-")  # made lazily: using the ids first changes nothing
    draws = [a.rng.random() for _ in range(3)]
    assert draws == [b.rng.random() for _ in range(3)] != [c.rng.random() for _ in range(3)]
    expected = random.Random(derive_seed("rng", 5))
    assert draws == [expected.random() for _ in range(3)]
    assert a.rng is a.rng


def test_same_value_compares_numbers_by_value_but_not_text() -> None:
    assert same_value(25, 25.0)
    assert not same_value("25", 25)
    assert same_value(True, 1)  # SQLite stores booleans as 0/1
    assert not same_value(None, 0)
    assert same_value(0.1 + 0.2, 0.3)


def test_closed_worlds_are_reset_and_reused(image: FixtureImage) -> None:
    w1 = World.restore(image, 1)
    conn = w1.db
    w1.db.execute("DELETE FROM items")
    w1.db.execute("INSERT INTO tags VALUES (2, 'z')")
    w1.close()
    w2 = World.restore(image, 2)
    assert w2.db is conn  # pooled: the reset was a rollback, not a copy
    assert w2.query("SELECT COUNT(*) FROM items") == [(3,)] and len(w2.diff()) == 0


def test_a_trial_that_commits_is_never_reused(image: FixtureImage) -> None:
    w1 = World.restore(image, 1)
    conn = w1.db
    w1.db.execute("DELETE FROM items")
    w1.db.execute("COMMIT")  # a misbehaving tool escaping the trial savepoint
    w1.close()
    w2 = World.restore(image, 2)
    assert w2.db is not conn
    assert w2.query("SELECT COUNT(*) FROM items") == [(3,)]


def test_tool_transactions_roll_back_on_error(image: FixtureImage) -> None:
    from passhat.tools import ToolContext

    w = World.restore(image, 1)
    ctx = ToolContext(w)
    with pytest.raises(RuntimeError), ctx.transaction() as db:
        db.execute("DELETE FROM items WHERE id = 1")
        raise RuntimeError("half-way")
    with ctx.transaction() as db:
        db.execute("DELETE FROM items WHERE id = 2")
    assert [c.key for c in w.diff().rows("items")] == [(2,)]


def test_a_query_refuses_every_write_and_reads_as_before(image: FixtureImage) -> None:
    w = World.restore(image, 1)
    reader = w.sqlite.reader()
    assert w.query("SELECT COUNT(*) FROM items") == [(3,)]
    refused = {
        "UPDATE items SET price = 0": "UPDATE on 'items'", "DELETE FROM items": "DELETE on 'items'",
        "INSERT INTO log VALUES ('sneaked in')": "INSERT on 'log'", "CREATE TABLE t (x)": "INSERT on 'sqlite_master'",
        "PRAGMA query_only = OFF": "PRAGMA on 'query_only'", "PRAGMA user_version = 7": "PRAGMA on 'user_version'",
        "pragma writable_schema=1": "PRAGMA on 'writable_schema'", "ROLLBACK TO passhat_trial": "SAVEPOINT",
        "COMMIT": "TRANSACTION", "ATTACH ':memory:' AS other": "ATTACH",
        "WITH x AS (SELECT 1) DELETE FROM items": "DELETE on 'items'",
    }
    for sql, what in refused.items():
        with pytest.raises(sqlite3.OperationalError, match="readonly") as exc:
            w.query(sql)
        assert f"may only read (action {what}" in str(exc.value) and str(exc.value).endswith(sql)
        assert f"(action {what}" in (reader.compile_error(sql) or "")  # a case's SQL is refused as it is checked
    assert w.query("PRAGMA user_version") == [(0,)] and w.query("PRAGMA table_info(tags)")
    assert w.query("SELECT name FROM pragma_table_info(?) WHERE pk > 0", ("items",)) == [("id",)]
    assert w.query("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 3) SELECT SUM(x) FROM r") \
        == [(6,)]
    assert w.query("SELECT COUNT(*) FROM items") == [(3,)] and len(w.diff()) == 0 and w.sqlite.db.in_transaction
    w.db.execute("DELETE FROM items WHERE id = 1")  # and the connection is writable between queries
    assert w.query("SELECT COUNT(*) FROM items") == [(2,)]
    w.close()


def test_a_query_is_not_answered_by_a_write_a_tool_prepared(image: FixtureImage) -> None:
    """The guard is asked only as a statement is prepared, and the connection caches statements by their text:
    a query the same as a tool's write must be prepared (and refused) as a query of its own."""
    w = World.restore(image, 1)
    w.db.execute("DELETE FROM tags")
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        w.query("DELETE FROM tags")
    w.close()
    again = World.restore(image, 2)  # the pooled connection, its statements still cached
    again.db.execute("DELETE FROM tags")
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        again.query("DELETE FROM tags")
    again.close()


def test_a_tool_call_after_a_query_can_write_and_the_next_query_cannot(image: FixtureImage) -> None:
    w = World.restore(image, 1)
    assert w.query("SELECT COUNT(*) FROM items") == [(3,)]
    scope = w.call_scope()
    w.sqlite.db.execute("DELETE FROM items WHERE id = 1")  # the connection itself, as a tool holding it writes
    scope.keep()
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        w.query("DELETE FROM items")
    with w.transaction() as db:
        db.execute("DELETE FROM items WHERE id = 2")
    assert w.query("SELECT id FROM items") == [(3,)]
    w.close()
    fresh = World.restore(image, 2)  # the pooled connection is writable and in the fixture's state again
    fresh.db.execute("DELETE FROM tags")
    assert fresh.query("SELECT COUNT(*) FROM items") == [(3,)] and len(fresh.diff().rows("tags")) == 1
    fresh.close()


def test_a_tool_that_turns_query_only_on_leaves_the_next_trial_writable(image: FixtureImage) -> None:
    w1 = World.restore(image, 1)
    conn = w1.db
    w1.db.execute("PRAGMA query_only = ON")  # a connection setting outlives the trial's rollback
    w1.close()
    w2 = World.restore(image, 2)
    assert w2.db is conn
    w2.db.execute("DELETE FROM tags")
    assert len(w2.diff().rows("tags")) == 1
    w2.close()


def test_a_new_copy_reads_its_schema_when_it_is_made(image: FixtureImage, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite parses a connection's schema (tables, change-log triggers: ~0.6 ms for the refunds one) on its first
    statement that names a table. A new copy has done it by the time ``acquire`` returns, so a run's lanes pay it
    as they start, not in their first trial's first tool call (docs/design/040). A pooled copy runs nothing."""
    made: list[list[str]] = []
    real = image.copies.open

    def traced() -> sqlite3.Connection:
        conn = real()
        made.append([])
        conn.set_trace_callback(made[-1].append)
        return conn

    monkeypatch.setattr(image.copies, "open", traced)
    conn = image.acquire()
    assert len(made) == 1 and any(s.startswith("SELECT") and " FROM " in s for s in made[0])
    image.release(conn)
    made[0].clear()
    assert image.acquire() is conn and len(made) == 1 and made[0] == []


def test_a_trial_costs_few_statements_of_the_harness(image: FixtureImage) -> None:
    """Per statement a pooled copy costs 5-50 µs at -j 256: the harness's own ones are counted here. A trial
    that reads, writes in two calls, fails a third and is graded with three queries."""
    from passhat.tools import ToolContext

    statements: list[str] = []
    World.restore(image, 0).close()  # the image's log position is read once, on its first copy
    w = World.restore(image, 1)
    w.db.set_trace_callback(statements.append)
    for key, fail in ((1, False), (2, False), (3, True)):
        mark = w.change_mark()
        scope = w.call_scope()
        ToolContext(w).db.execute("DELETE FROM items WHERE id = ?", (key,))
        if fail:
            scope.undo()
            continue
        scope.keep()
        assert w.changed_since(mark) == [("items", [key])]
    assert [c.key for c in w.diff().rows("items")] == [(1,), (2,)]
    for _ in range(3):
        assert w.query("SELECT COUNT(*) FROM items") == [(1,)]
    conn = w.sqlite.db
    w.close()
    again = World.restore(image, 2)  # the same pooled connection: nothing to run before its first call
    assert again.sqlite.db is conn
    again.close()
    ours = [s for s in statements if not s.startswith(("DELETE FROM items", "/*passhat:read*/ SELECT COUNT(*)", 'SELECT "id"'))]
    assert ours == [
        "SAVEPOINT passhat_call", "SELECT seq, tbl, pk FROM _passhat_log WHERE seq > 0 ORDER BY seq",
        "SAVEPOINT passhat_call", "SELECT seq, tbl, pk FROM _passhat_log WHERE seq > 1 ORDER BY seq",
        "SAVEPOINT passhat_call", "ROLLBACK TO passhat_call", "RELEASE passhat_call",  # only a failed call releases
        "SELECT tbl, pk, old FROM _passhat_log WHERE seq > 0 ORDER BY seq",
        # no pragma for the three queries (each one expired every prepared statement: design 037)
        "ROLLBACK TO passhat_trial",  # and the next trial begins inside it
        "ROLLBACK TO passhat_trial",
    ]
