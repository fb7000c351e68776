"""SQLite-file worlds: a private copy of the fixture file per trial, diffed by comparing pages with the
image, with nothing of the harness inside the file. Each page-level shortcut is checked against a full
comparison of every row, on the changes that could slip past it."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from passhat.domain import Domain
from passhat.world.diff import Diff
from passhat.worlds import SqliteFile
from passhat.worlds.sqlite_file import diff_tables
from passhat.worlds.sqlite_pages import EVERY_ROW

SCHEMA = """
CREATE TABLE docs (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT);
CREATE TABLE people (email TEXT PRIMARY KEY, name TEXT, age INTEGER);
CREATE TABLE pairs (a INTEGER, b TEXT, n REAL, PRIMARY KEY (a, b)) WITHOUT ROWID;
CREATE TABLE log (line TEXT);
CREATE INDEX people_age ON people(age);
"""


def load(conn: sqlite3.Connection) -> None:
    rng = random.Random(1)
    conn.executemany("INSERT INTO docs VALUES (?, ?, ?)",
                     [(i, f"doc {i}", "x" * rng.choice([10, 300, 6000])) for i in range(1, 1500)])
    conn.executemany("INSERT INTO people VALUES (?, ?, ?)", [(f"p{i}@ex.com", f"P {i}", i % 90) for i in range(800)])
    conn.executemany("INSERT INTO pairs VALUES (?, ?, ?)", [(i % 40, f"k{i}", i / 7) for i in range(600)])
    conn.executemany("INSERT INTO log VALUES (?)", [(f"line {i}",) for i in range(300)])


@pytest.fixture(scope="module")
def domain() -> Any:
    d = Domain("files", schema=SCHEMA, fixtures={"default": SqliteFile(load=load)}, policy="")
    yield d
    d.close_workspaces()


def full_diff(world: Any) -> Diff:
    """The reference: every row of every table compared with the image."""
    image = world.rows.image
    return diff_tables(world.rows.db, image.path, {n: (t, [EVERY_ROW]) for n, t in image.tables.items()},
                       schema_changed=True)


def server(world: Any) -> sqlite3.Connection:
    """A connection of another process's kind: it opens the trial's file by its path."""
    return sqlite3.connect(world.reach()["sqlite_path"], isolation_level=None)


def canonical(diff: Diff) -> list[tuple[Any, ...]]:
    return sorted((c.table, repr(c.key), repr(c.before), repr(c.after)) for c in diff.rows())


def mutate(conn: sqlite3.Connection, rng: random.Random) -> None:
    for _ in range(rng.randrange(1, 40)):
        op = rng.randrange(9)
        if op == 0:
            conn.execute("UPDATE docs SET body = ? WHERE id = ?", ("y" * rng.choice([10, 300, 6000]), rng.randrange(1, 1600)))
        elif op == 1:  # same size, in place: only an overflow page may change
            i = rng.randrange(1, 1500)
            old = conn.execute("SELECT body FROM docs WHERE id = ?", (i,)).fetchone()
            if old:
                conn.execute("UPDATE docs SET body = ? WHERE id = ?", (old[0][:-1] + "!", i))
        elif op == 2:
            conn.execute("DELETE FROM docs WHERE id BETWEEN ? AND ?", (a := rng.randrange(1, 1500), a + rng.randrange(60)))
        elif op == 3:
            conn.executemany("INSERT INTO docs (title, body) VALUES (?, ?)", [("new", "z" * 500)] * rng.randrange(1, 30))
        elif op == 4:
            conn.execute("UPDATE people SET age = age + 1 WHERE email = ?", (f"p{rng.randrange(800)}@ex.com",))
        elif op == 5:
            conn.execute("DELETE FROM people WHERE email = ?", (f"p{rng.randrange(800)}@ex.com",))
            conn.execute("INSERT OR REPLACE INTO people VALUES (?, 'again', 1)", (f"p{rng.randrange(800)}@ex.com",))
        elif op == 6:
            conn.execute("UPDATE pairs SET n = n + 1 WHERE a = ?", (rng.randrange(40),))
        elif op == 7:
            conn.execute("INSERT OR IGNORE INTO pairs VALUES (?, ?, 0)", (rng.randrange(40), f"n{rng.randrange(99)}"))
        else:
            conn.execute("DELETE FROM log WHERE rowid % ? = 0", (rng.randrange(2, 30),))


@pytest.mark.parametrize("seed", range(12))
def test_the_page_diff_equals_a_full_comparison(domain: Any, seed: int) -> None:
    world = domain.restore("default", seed)
    try:
        with server(world) as conn:
            mutate(conn, random.Random(seed))
        fast = world.diff()
        assert len(fast) > 0
        assert canonical(fast) == canonical(full_diff(world))
    finally:
        world.close()


def test_a_large_value_rewritten_in_place_is_found(domain: Any) -> None:
    """SQLite overwrites a same-size value in place: only an overflow page changes, not the row's leaf."""
    world = domain.restore("default", 1)
    try:
        with server(world) as conn:
            (i, body) = conn.execute("SELECT id, body FROM docs WHERE length(body) = 6000 LIMIT 1").fetchone()
            conn.execute("UPDATE docs SET body = ? WHERE id = ?", (body[:-1] + "!", i))
        assert [(c.key, c.changed_fields) for c in world.diff().rows()] == [((i,), ["body"])]
    finally:
        world.close()


def test_a_server_vacuum_or_wal_still_diffs_exactly(domain: Any) -> None:
    world = domain.restore("default", 1)
    try:
        conn = server(world)
        conn.execute("DELETE FROM docs WHERE id < 900")
        conn.execute("VACUUM")  # the file shrinks and every page moves
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("UPDATE people SET name = 'wal' WHERE email = 'p3@ex.com'")  # in the -wal file, not the main one
        conn.close()
        diff = world.diff()
        assert len(diff.of_kind("deleted", "docs")) == 899
        assert [(c.key, c.after["name"]) for c in diff.rows("people")] == [(("p3@ex.com",), "wal")]
        assert canonical(diff) == canonical(full_diff(world))
    finally:
        world.close()


def test_tables_a_server_creates_or_drops_are_in_the_diff(domain: Any) -> None:
    world = domain.restore("default", 1)
    try:
        with server(world) as conn:
            conn.execute("CREATE TABLE cache (k TEXT PRIMARY KEY, v TEXT)")
            conn.execute("INSERT INTO cache VALUES ('a', '1'), ('b', '2')")
            conn.execute("DROP TABLE log")
        diff = world.diff()
        assert sorted(c.key for c in diff.rows("cache")) == [("a",), ("b",)]
        assert len(diff.of_kind("deleted", "log")) == 300 and diff.tables == ["cache", "log"]
    finally:
        world.close()


def test_the_file_holds_nothing_of_the_harness_and_copies_are_private(domain: Any) -> None:
    a, b = domain.restore("default", 1), domain.restore("default", 2)
    try:
        with server(a) as conn:
            objects = conn.execute("SELECT type, name FROM sqlite_master ORDER BY name").fetchall()
            conn.execute("DELETE FROM people")
        assert objects == [("table", "docs"), ("table", "log"), ("table", "pairs"), ("table", "people"),
                           ("index", "people_age"), ("index", "sqlite_autoindex_people_1")]
        assert a.reach()["sqlite_path"] != b.reach()["sqlite_path"]
        assert len(b.diff()) == 0 and len(a.diff()) == 800
        assert Path(a.reach()["sqlite_path"]).parent.stat().st_mode & 0o077 == 0
    finally:
        a.close()
        b.close()
