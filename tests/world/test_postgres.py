"""PostgreSQL worlds: what a trial's role can and cannot reach, the diff's harder cases, fixtures from a
pg_dump, bad fixtures named as such, and the clean-up of databases a dead process left behind."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest

from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.tools import ToolBoundary, ToolContext, tool
from passhat.worlds import Postgres
from passhat.worlds.postgres.cluster import client_tool
from passhat.worlds.postgres.qmark import Row
from passhat.worlds.postgres.reader import to_pyformat

SCHEMA = """
CREATE TABLE orders (id serial PRIMARY KEY, status text NOT NULL, total numeric(10, 2), placed timestamp);
CREATE TABLE lines (order_id integer REFERENCES orders(id) ON DELETE CASCADE, sku text, qty integer,
                    PRIMARY KEY (order_id, sku));
CREATE TABLE audit (msg text, n integer);
INSERT INTO orders (status, total, placed) VALUES ('placed', 10.50, '2026-01-02 03:04:05'), ('placed', 3, NULL);
INSERT INTO lines VALUES (1, 'a', 2), (1, 'b', 1), (2, 'a', 5);
INSERT INTO audit VALUES ('x', 1), ('x', 1), ('y', 2);
"""


@tool(kind="write")
def commits_itself(ctx: ToolContext) -> dict:
    """A tool that breaks the rules: writes, then commits by itself."""
    ctx.pg.execute("UPDATE orders SET status = 'shipped' WHERE id = 1")
    ctx.pg.commit()
    return {}


@pytest.fixture(scope="module")
def domain(pg: Any) -> Any:
    d = Domain("pgshop", fixtures={"default": Postgres(schema=SCHEMA)}, policy="", tools=[commits_itself])
    d.world_images("default")
    yield d
    d.close_workspaces()


@pytest.fixture
def world(domain: Any) -> Any:
    w = domain.restore("default", 1)
    yield w
    w.close()


def as_trial(world: Any) -> Any:
    """A connection as the trial's own role, through the URL a server is given."""
    return psycopg.connect(world.reach()["database_url"], autocommit=True)


def test_the_trials_role_cannot_see_or_touch_the_change_log(world: Any) -> None:
    with as_trial(world) as conn:
        for sql in ("SELECT * FROM _passhat.log", "DELETE FROM _passhat.log",
                    "ALTER TABLE orders DISABLE TRIGGER _passhat_log", "DROP TRIGGER _passhat_log ON orders",
                    "SELECT * FROM _passhat.diff()"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
        conn.execute("UPDATE orders SET status = 'paid' WHERE id = 2")  # its own writes it may make
        tables = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema "
                                             "NOT IN ('pg_catalog', 'information_schema') ORDER BY 1")]
    assert tables == ["audit", "lines", "orders"]  # the log is not among what it can list
    assert [(c.key, c.after["status"]) for c in world.diff().rows("orders")] == [((2,), "paid")]


def test_a_trials_role_cannot_reach_another_trials_database(domain: Any, world: Any) -> None:
    other = domain.restore("default", 2)
    try:
        theirs = psycopg.conninfo.conninfo_to_dict(other.reach()["database_url"])["dbname"]
        mine = psycopg.conninfo.conninfo_to_dict(world.reach()["database_url"])
        with pytest.raises(psycopg.OperationalError, match="permission denied|not permitted"):
            psycopg.connect(**{**mine, "dbname": theirs}).close()
        template = world.rows.image.template
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(**{**mine, "dbname": template}).close()
    finally:
        other.close()


def test_truncate_cascades_keyless_rows_and_new_tables_are_diffed(world: Any) -> None:
    with as_trial(world) as conn:
        conn.execute("DELETE FROM orders WHERE id = 1")  # cascades to its lines
        conn.execute("UPDATE audit SET n = 3 WHERE msg = 'y'")
        conn.execute("DELETE FROM audit WHERE ctid = (SELECT ctid FROM audit WHERE msg = 'x' LIMIT 1)")
        conn.execute("INSERT INTO audit VALUES ('z', 9)")
        conn.execute("CREATE TABLE scratch (k text PRIMARY KEY)")
        conn.execute("INSERT INTO scratch VALUES ('kept')")
        (new_id,) = conn.execute("INSERT INTO orders (status) VALUES ('new') RETURNING id").fetchone()
    diff = world.diff()
    assert sorted((c.key, c.kind) for c in diff.rows("lines")) == [((1, "a"), "deleted"), ((1, "b"), "deleted")]
    assert sorted((c.kind, c.before and c.before["msg"], c.after and c.after["n"]) for c in diff.rows("audit")) == [
        ("deleted", "x", None), ("deleted", "y", None), ("inserted", None, 3), ("inserted", None, 9)]
    assert [c.key for c in diff.rows("scratch")] == [("kept",)]
    orders = {c.key: c for c in diff.rows("orders")}
    assert orders[(1,)].before == {"id": 1, "status": "placed", "total": 10.5, "placed": "2026-01-02T03:04:05"}
    assert new_id == 3 and orders[(3,)].kind == "inserted"  # the sequence starts where the fixture left it
    with as_trial(world) as conn:
        conn.execute("TRUNCATE lines")
    assert len(world.diff().of_kind("deleted", "lines")) == 3


def test_a_tool_that_commits_by_itself_is_refused_and_undone(world: Any) -> None:
    call = asyncio.run(ToolBoundary([commits_itself], ToolContext(world)).call("commits_itself", {}))
    assert call.status == "exception" and "commit" in (call.error or "")
    assert len(world.diff()) == 0


def test_queries_translate_markers_outside_quotes() -> None:
    assert to_pyformat('SELECT "a?" FROM t WHERE x = ? AND y IS ? AND z IS NOT ?') == \
        'SELECT "a?" FROM t WHERE x = %s AND y IS NOT DISTINCT FROM %s AND z IS DISTINCT FROM %s'
    assert to_pyformat("SELECT '?', '%', $$ ? $$ -- ? \n FROM t WHERE a LIKE 'x%' AND b = ? /* ? */") == \
        "SELECT '?', '%%', $$ ? $$ -- ? \n FROM t WHERE a LIKE 'x%%' AND b = %s /* ? */"
    assert to_pyformat("SELECT 'it''s ?' WHERE a = ?") == "SELECT 'it''s ?' WHERE a = %s"


def test_ctx_db_rows_behave_like_sqlite_rows() -> None:
    row = Row(["id", "total"], [7, __import__("decimal").Decimal("12.50")])
    (a, b) = row
    assert dict(row) == {"id": 7, "total": 12.5} and row["total"] == 12.5 and row[0] == 7 and (a, b) == (7, 12.5)
    with pytest.raises(IndexError, match="columns: id, total"):
        row["nope"]


def test_a_fixture_from_pg_dump_loads_in_both_formats(pg: Any, domain: Any, tmp_path: Path) -> None:
    source = pg.new_name("dumped")  # a team's own database, made without passhat, to dump
    with pg.connect() as admin:
        admin.execute(f'CREATE DATABASE "{source}" TEMPLATE template0 LC_COLLATE \'C\' LC_CTYPE \'C\'')
    try:
        with pg.connect(source) as conn:
            conn.execute(SCHEMA)
        params = {**pg.params, "dbname": source}
        dsn = " ".join(f"{k}='{v}'" for k, v in params.items() if k != "password" and v)
        env = {"PGPASSWORD": str(pg.params.get("password") or ""), "PATH": "/usr/bin:/bin"}
        for fmt in ("c", "p"):
            subprocess.run([client_tool("pg_dump"), f"-F{fmt}", "--no-owner", "-f", str(tmp_path / f"dump.{fmt}"),
                            f"--dbname={dsn}"], check=True, env=env)
    finally:
        with pg.connect() as admin:
            admin.execute(f'DROP DATABASE "{source}"')
    hashes = []
    for fmt in ("c", "p"):
        d = Domain("dumped", fixtures={"default": Postgres(dump=tmp_path / f"dump.{fmt}")}, policy="")
        with d.reading("default") as reader:
            assert reader.query('SELECT COUNT(*) FROM "lines" WHERE "sku" = ?', ("a",)) == [(2,)]
        hashes.append(d.fixture_hash("default"))
        d.close_workspaces()
    assert hashes[0] == hashes[1] == domain.fixture_hash("default")  # the state, however it was loaded


def test_bad_fixtures_name_the_fixture_and_what_is_wrong(pg: Any, tmp_path: Path) -> None:
    data = tmp_path / "rows.yaml"
    data.write_text("tables:\n  nope:\n    - {a: 1}\n")
    cases = [(Postgres(schema="CREATE TABLE t (a int PRIMARY KEY); CREATE TABLE t (b int);"), "schema does not run"),
             (Postgres(schema="CREATE TABLE t (a int PRIMARY KEY);", data=data), "fixture table 'nope' is not in the"),
             (Postgres(schema="CREATE TABLE nope (a int PRIMARY KEY CHECK (a > 5));", data=data), r"nope\[0\]")]
    for source, message in cases:
        d = Domain("bad", fixtures={"broken": source}, policy="")
        with pytest.raises(DomainError, match=message) as caught:
            d.world_images("broken")
        assert "fixture 'broken'" in str(caught.value) or str(data) in str(caught.value)
    with pytest.raises(DomainError, match="no such file"):
        Postgres(dump=tmp_path / "missing.dump")


def test_databases_a_dead_process_left_are_dropped_and_a_live_ones_kept(pg: Any) -> None:
    dead, alive = "0123456789ab", "ba9876543210"
    holder = pg.connect()
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", ((0x7068 << 48) | int(alive, 16),))  # a live session's lock
        with pg.connect() as admin:
            for session in (dead, alive):
                admin.execute(f'CREATE DATABASE "passhat_{session}_t1"')
            admin.execute(f'CREATE ROLE "passhat_{dead}_t1_role"')
        dropped = pg.remove_dead()
        with pg.connect() as admin:
            names = {r[0] for r in admin.execute("SELECT datname FROM pg_database WHERE datname LIKE 'passhat\\_%'")}
            roles = {r[0] for r in admin.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE 'passhat\\_%'")}
        assert dropped == [f"passhat_{dead}_t1"]
        assert f"passhat_{alive}_t1" in names and f"passhat_{dead}_t1" not in names
        assert f"passhat_{dead}_t1_role" not in roles
    finally:
        holder.close()
        with pg.connect() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "passhat_{alive}_t1"')


@tool(kind="write")
def breaks_at_commit(ctx: ToolContext) -> dict:
    """Writes a row that violates a constraint checked only at commit."""
    ctx.pg.execute("SET CONSTRAINTS ALL DEFERRED")
    ctx.pg.execute("INSERT INTO late (ref) VALUES (999)")
    return {"inserted": True}


def test_a_call_whose_commit_fails_is_an_error_and_leaves_nothing(pg: Any) -> None:
    schema = ("CREATE TABLE parent (id int PRIMARY KEY); CREATE TABLE late (ref int REFERENCES parent(id) "
              "DEFERRABLE INITIALLY DEFERRED);")
    d = Domain("late", fixtures={"default": Postgres(schema=schema)}, policy="", tools=[breaks_at_commit])
    world = d.restore("default", 1)
    try:
        call = asyncio.run(ToolBoundary([breaks_at_commit], ToolContext(world)).call("breaks_at_commit", {}))
        assert call.status == "exception" and "when committing" in (call.error or "") and not call.committed
        assert len(world.diff()) == 0
    finally:
        world.close()
        d.close_workspaces()
