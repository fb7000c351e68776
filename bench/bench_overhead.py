"""Per-trial harness overhead (reset + diff + grading) versus database size.

Builds a retail-like domain (customers, products, orders, order items) at two sizes — about 1,500
rows / 3 MB (τ-bench retail scale) and 100× that — runs the same scripted agent (3 reads, 2 writes)
through the real runner path, and prints the median milliseconds of each phase and the ratio between
sizes. It also prints the cost of one tool call through the boundary and, within it, of the savepoint
that makes each call atomic. Run: ``python bench/bench_overhead.py [--trials N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import time

from passhat.cases import Case
from passhat.domain import Domain
from passhat.runner.trial import run_trial
from passhat.tools import ToolBoundary, ToolContext, tool
from passhat.tools.boundary import CALL_SAVEPOINT
from passhat.world import World

SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT, address TEXT, notes TEXT);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL, description TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, status TEXT, total REAL, placed_at TEXT);
CREATE TABLE order_items (order_id INTEGER, product_id INTEGER, qty INTEGER, price REAL,
                          PRIMARY KEY (order_id, product_id));
CREATE TABLE refunds (id TEXT PRIMARY KEY, order_id INTEGER, amount REAL, created_at TEXT);
"""


def fixture(scale: int):  # noqa: ANN201 - returns a loader
    """About 1,500 rows and ~3 MB at scale 1 (text columns padded like real records)."""

    def load(conn: sqlite3.Connection) -> None:
        rng = random.Random(0)
        pad = "x" * 4800
        n_c, n_p, n_o = 500 * scale, 50 * scale, 500 * scale
        conn.executemany("INSERT INTO customers VALUES (?,?,?,?,?)",
                         [(i, f"c{i}", f"c{i}@ex.com", f"{i} Main St", pad) for i in range(n_c)])
        conn.executemany("INSERT INTO products VALUES (?,?,?,?)",
                         [(i, f"p{i}", rng.uniform(5, 500), pad) for i in range(n_p)])
        conn.executemany("INSERT INTO orders VALUES (?,?,?,?,?)",
                         [(i, rng.randrange(n_c), "delivered", 0.0, "2026-01-01") for i in range(n_o)])
        conn.executemany("INSERT OR IGNORE INTO order_items VALUES (?,?,?,?)",
                         [(rng.randrange(n_o), rng.randrange(n_p), 1, 10.0) for _ in range(450 * scale)])

    return load


@tool(kind="read")
def get_order(ctx: ToolContext, order_id: int) -> dict:
    """Read an order.

    Args:
        order_id: The order id.
    """
    row = ctx.db.execute("SELECT id, customer_id, status, total FROM orders WHERE id = ?", (order_id,)).fetchone()
    return dict(row)


@tool(kind="write")
def refund(ctx: ToolContext, order_id: int, amount: float) -> dict:
    """Refund an order.

    Args:
        order_id: The order id.
        amount: Amount to refund.
    """
    rid = ctx.new_id("RF-")
    ctx.db.execute("INSERT INTO refunds VALUES (?,?,?,?)", (rid, order_id, amount, ctx.now()))
    ctx.db.execute("UPDATE orders SET status = 'refunded' WHERE id = ?", (order_id,))
    return {"id": rid}


CASE = Case.model_validate({
    "id": "bench", "domain": "bench", "instruction": "Refund order 7.",
    "assertions": [
        {"kind": "row_count", "table": "refunds", "where": {"order_id": 7}, "equals": 1},
        {"kind": "field_equals", "table": "orders", "where": {"id": 7}, "field": "status", "equals": "refunded"},
        {"kind": "net_change", "table": "refunds", "column": "amount", "equals": 12.5},
        {"kind": "unchanged_except", "tables": ["refunds"], "rows": [{"table": "orders", "where": {"id": 7}}]},
        {"kind": "reply_contains", "text": "refunded"},
    ],
})


async def agent(ep) -> str:  # noqa: ANN001
    for oid in (7, 8, 9):
        await ep.call("get_order", {"order_id": oid})
    await ep.call("refund", {"order_id": 7, "amount": 12.5})
    await ep.call("get_order", {"order_id": 7})
    return "Order 7 refunded."


async def measure(scale: int, trials: int) -> dict[str, float]:
    domain = Domain("bench", schema=SCHEMA, fixtures={"default": fixture(scale)}, policy="", tools=[get_order, refund])
    t = time.perf_counter()
    image = domain.image("default")
    build_s = time.perf_counter() - t
    rows = sum(image.connect().execute(f"SELECT COUNT(*) FROM {n}").fetchone()[0] for n in image.tables)
    phases: dict[str, list[float]] = {"reset": [], "diff": [], "grade": [], "total_harness": []}
    for i in range(trials):
        rec = await run_trial(CASE, domain, agent, i, i)
        assert rec.outcome == "pass", rec.failed_grades()
        phases["reset"].append(rec.timing.reset_ms)
        phases["diff"].append(rec.timing.diff_ms)
        phases["grade"].append(rec.timing.grade_ms)
        phases["total_harness"].append(rec.timing.harness_ms)
    out = {k: statistics.median(v) for k, v in phases.items()}
    out.update(rows=rows, mb=image.size_bytes / 1e6, build_s=build_s)
    return out


async def per_call(scale: int, calls: int) -> dict[str, float]:
    """Microseconds per call through the boundary (read, write), and of the per-call savepoint alone."""
    domain = Domain("bench", schema=SCHEMA, fixtures={"default": fixture(scale)}, policy="", tools=[get_order, refund])
    world = World.restore(domain.image("default"), 1)
    boundary = ToolBoundary([get_order, refund], ToolContext(world))
    out: dict[str, float] = {}
    calls_made = (("read_call", "get_order", {"order_id": 7}), ("write_call", "refund", {"order_id": 7, "amount": 1.0}))
    for key, name, args in calls_made:
        t = time.perf_counter()
        for _ in range(calls):
            await boundary.call(name, args)
        out[key] = (time.perf_counter() - t) / calls * 1e6
    t = time.perf_counter()
    for _ in range(calls):
        world.db.execute(f"SAVEPOINT {CALL_SAVEPOINT}")
        world.db.execute(f"RELEASE {CALL_SAVEPOINT}")
    out["savepoint"] = (time.perf_counter() - t) / calls * 1e6
    world.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=50)
    args = parser.parse_args()
    small = asyncio.run(measure(1, args.trials))
    large = asyncio.run(measure(100, max(5, args.trials // 5)))
    print(f"{'':16}{'small':>12}{'100x':>12}{'ratio':>10}")
    for key, unit in (("rows", ""), ("mb", " MB"), ("build_s", " s"), ("reset", " ms"), ("diff", " ms"),
                      ("grade", " ms"), ("total_harness", " ms")):
        a, b = small[key], large[key]
        print(f"{key + unit:16}{a:12.3f}{b:12.3f}{b / a if a else float('nan'):10.1f}")
    print("(build_s is once per run; reset/diff/grade are per trial, medians)")
    calls = asyncio.run(per_call(1, 2000))
    print(f"per tool call through the boundary: read {calls['read_call']:.0f} µs, write {calls['write_call']:.0f} µs; "
          f"of which the savepoint that makes the call atomic: {calls['savepoint']:.1f} µs")


if __name__ == "__main__":
    main()
