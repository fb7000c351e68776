"""Per-trial reset + diff of PostgreSQL worlds at 1 MB and 100 MB, against the naive way and SQLite.

For each size: one table of accounts (~1 KB of incompressible text per row), built once as a template.
A trial writes five rows (3 updates, 1 insert, 1 delete) and takes its diff. Measured per trial:
- ``pg wait``: what a trial waits for to get its database when one is ready (trials arrive slower than
  databases are made: real agents think for seconds);
- ``pg wait, back to back``: the same when trials arrive with no think time at all (the pool empties:
  each waits for a clone);
- ``pg diff``: the change-log diff; ``pg make``: the work off the critical path per trial (clone, role,
  two logins), for ``CREATE DATABASE ... STRATEGY`` ``wal_log`` and ``file_copy``;
- ``pg_restore``: the naive reset, restoring a ``pg_dump`` of the fixture into a fresh database;
- ``sqlite image``: the in-memory SQLite world (savepoint rollback + trigger log), same rows;
- ``sqlite file``: the SQLite-file world (a copy of the file + page comparison diff), same rows.
Run: ``python bench/bench_pg_world.py [--trials N] [--sizes 1,100]`` (needs PostgreSQL installed, or
``PASSHAT_PG_URL``). Prints medians in ms and the 100 MB / 1 MB ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import string
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path

from passhat.domain import Domain
from passhat.tools import ToolBoundary, ToolContext, tool
from passhat.worlds import Postgres, SqliteFile
from passhat.worlds.postgres import server as servers
from passhat.worlds.postgres.cluster import client_tool
from passhat.worlds.postgres.slots import Slots

ROW_BYTES = 1000
SCHEMA = "CREATE TABLE accounts (id integer PRIMARY KEY, owner text NOT NULL, balance double precision, pad text);"


def pg_data(mb: int) -> str:
    rows = mb * 1_000_000 // ROW_BYTES
    return (f"INSERT INTO accounts SELECT g, 'owner ' || g, 100, "
            f"(SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, {ROW_BYTES // 32}) i) "
            f"FROM generate_series(1, {rows}) g;")


def sqlite_loader(mb: int):  # noqa: ANN201 - a loader
    rows = mb * 1_000_000 // ROW_BYTES
    rng = random.Random(0)

    def load(conn: sqlite3.Connection) -> None:
        for start in range(1, rows + 1, 5000):
            batch = [(i, f"owner {i}", 100.0, "".join(rng.choices(string.hexdigits, k=ROW_BYTES)))
                     for i in range(start, min(rows, start + 4999) + 1)]
            conn.executemany("INSERT INTO accounts VALUES (?, ?, ?, ?)", batch)

    return load


@tool(kind="write")
def five_writes(ctx: ToolContext, seed: int) -> dict:
    """Three updates, an insert and a delete.

    Args:
        seed: Which rows.
    """
    for i in range(3):
        ctx.db.execute("UPDATE accounts SET balance = balance - 1 WHERE id = ?", (seed * 3 + i + 1,))
    ctx.db.execute("INSERT INTO accounts (id, owner, balance, pad) VALUES (?, ?, ?, ?)", (10_000_000 + seed, "new", 0, ""))
    ctx.db.execute("DELETE FROM accounts WHERE id = ?", (seed * 3 + 10,))
    return {}


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


async def trial_times(domain: Domain, trials: int, think_s: float) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"wait": [], "diff": [], "discard": []}
    for i in range(trials):
        if think_s:
            await asyncio.sleep(think_s)  # an agent thinking: the pool refills meanwhile
        t = time.perf_counter()
        world = await domain.open_world("default", i)
        out["wait"].append((time.perf_counter() - t) * 1000)
        await ToolBoundary(domain.tool_list(), ToolContext(world)).call("five_writes", {"seed": i})
        t = time.perf_counter()
        state = await world.final_state()
        out["diff"].append((time.perf_counter() - t) * 1000)
        assert len(state.diff) == 5, state.diff.to_json()
        t = time.perf_counter()
        await world.aclose()
        out["discard"].append((time.perf_counter() - t) * 1000)
    return out


def make_times(domain: Domain, strategy: str, n: int) -> list[float]:
    """The work of making one trial database (off the critical path), with one strategy."""
    image = domain.world_images("default")[0]
    slots = Slots(image.server, image.template, image.slots.group, strategy, ahead=0)  # type: ignore[attr-defined]
    admin = image.server.connect()  # type: ignore[attr-defined]
    times = []
    try:
        for _ in range(n):
            slot = slots.make(admin)
            times.append(slot.made_ms)
            slots._drop_now(admin, slot.dbname, slot.role)
            for conn in (slot.native, slot.harness):
                conn.close()
    finally:
        admin.close()
    return times


def restore_times(domain: Domain, n: int) -> list[float]:
    """The naive reset: ``pg_restore`` of a dump of the fixture into a new database, per trial."""
    image = domain.world_images("default")[0]
    server = image.server  # type: ignore[attr-defined]
    dump = Path(tempfile.mkdtemp()) / "fixture.dump"
    params = {**server.params, "dbname": image.template}  # type: ignore[attr-defined]
    dsn = " ".join(f"{k}='{v}'" for k, v in params.items() if k != "password" and v)
    env = {"PGPASSWORD": str(params.get("password") or ""), "PATH": "/usr/bin:/bin"}
    with server.connect() as admin:
        admin.execute(f'ALTER DATABASE "{image.template}" ALLOW_CONNECTIONS true')  # type: ignore[attr-defined]
        subprocess.run([client_tool("pg_dump"), "-Fc", "-f", str(dump), f"--dbname={dsn}"], check=True, env=env)
        admin.execute(f'ALTER DATABASE "{image.template}" ALLOW_CONNECTIONS false')  # type: ignore[attr-defined]
        times = []
        for _ in range(n):
            name = server.new_name("naive")
            t = time.perf_counter()
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
            target = dsn.replace(f"dbname='{image.template}'", f"dbname='{name}'")  # type: ignore[attr-defined]
            subprocess.run([client_tool("pg_restore"), "--no-owner", f"--dbname={target}", str(dump)], check=True,
                           env=env, capture_output=True)
            times.append((time.perf_counter() - t) * 1000)
            admin.execute(f'DROP DATABASE "{name}"')
    return times


def sqlite_image_times(mb: int, trials: int) -> dict[str, list[float]]:
    domain = Domain("bench", schema=SCHEMA, fixtures={"default": sqlite_loader(mb)}, policy="", tools=[five_writes])
    domain.image("default")
    return asyncio.run(trial_times(domain, trials, 0))


def sqlite_file_times(mb: int, trials: int) -> dict[str, list[float]]:
    domain = Domain("bench", schema=SCHEMA, fixtures={"default": SqliteFile(load=sqlite_loader(mb))}, policy="",
                    tools=[five_writes])
    domain.world_images("default")
    out = asyncio.run(trial_times(domain, trials, 0))
    domain.close_workspaces()
    return out


def measure(mb: int, trials: int) -> dict[str, float]:
    data = Path(tempfile.mkdtemp()) / "data.sql"
    data.write_text(pg_data(mb))
    domain = Domain("bench", fixtures={"default": Postgres(schema=SCHEMA, data=data)}, policy="", tools=[five_writes],
                    start=datetime(2026, 1, 1))
    t = time.perf_counter()
    domain.world_images("default")
    build_s = time.perf_counter() - t
    thinking = asyncio.run(trial_times(domain, trials, 0.5))
    back_to_back = asyncio.run(trial_times(domain, trials, 0))
    out = {
        "build_s": build_s,
        "pg wait": median(thinking["wait"]), "pg diff": median(thinking["diff"]),
        "pg reset+diff": median(thinking["wait"]) + median(thinking["diff"]),
        "pg discard": median(thinking["discard"]),
        "pg wait, back to back": median(back_to_back["wait"]),
        "pg make, wal_log": median(make_times(domain, "wal_log", max(3, trials // 2))),
        "pg make, file_copy": median(make_times(domain, "file_copy", max(3, trials // 2))),
        "pg_restore (naive)": median(restore_times(domain, max(3, trials // 4))),
    }
    domain.close_workspaces()
    image_t = sqlite_image_times(mb, trials)
    out["sqlite image reset+diff"] = median(image_t["wait"]) + median(image_t["diff"])
    file_t = sqlite_file_times(mb, trials)
    out["sqlite file reset"] = median(file_t["wait"])
    out["sqlite file diff"] = median(file_t["diff"])
    out["sqlite file reset+diff"] = out["sqlite file reset"] + out["sqlite file diff"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--sizes", default="1,100", help="fixture sizes in MB, comma-separated")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    server = servers.current()
    print(f"server: {'throwaway cluster' if server.cluster else server.url_given} (PostgreSQL {server.version}); "
          f"load average {os.getloadavg()[0]:.1f}")
    results = {mb: measure(mb, args.trials) for mb in sizes}
    keys = list(results[sizes[0]])
    print(f"{'ms per trial (median)':28}" + "".join(f"{f'{mb} MB':>12}" for mb in sizes)
          + (f"{'ratio':>9}" if len(sizes) > 1 else ""))
    for key in keys:
        values = [results[mb][key] for mb in sizes]
        ratio = f"{values[-1] / values[0]:9.1f}" if len(sizes) > 1 and values[0] else ""
        print(f"{key:28}" + "".join(f"{v:12.2f}" for v in values) + ratio)
    print(f"load average at the end {os.getloadavg()[0]:.1f} (the make/restore rows are the most sensitive to it)")
    print("(build_s in seconds, once per run; 'pg wait' is what a trial waits for its database while the pool "
          "keeps up; 'pg make' is the work per trial done ahead, off its critical path)")


if __name__ == "__main__":
    main()
