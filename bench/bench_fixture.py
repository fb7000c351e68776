"""A large fixture: suite load time and peak memory against concurrency.

Writes a suite folder with a ``.py`` domain whose fixture function generates about ``--mb`` MB of rows,
and ``--cases`` cases on that one fixture (half spell the domain ``domain.py``, half ``./domain.py``).
Each measurement runs in a fresh subprocess so its peak RSS (``VmHWM``) is its own:

- the time to load the suite (``load_suite``: import the domain, build the fixture, check every case);
- the time to hash it (what a run's manifest records);
- peak RSS of a run at ``-j 4`` and ``-j 32``, with an agent that holds its world for ``--hold`` seconds
  (as an agent waiting on a model does), so ``-j`` worlds are alive at once.

Prints the numbers and the ratios (-j 32 over -j 4; RSS over image size). Run:
``python bench/bench_fixture.py [--mb 100] [--cases 200] [--hold 0.3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DOMAIN = '''
from passhat.domain import Domain
from passhat.tools import ToolContext, tool

ROWS = {rows}


def load(conn):
    pad = "x" * 4800
    conn.executemany("INSERT INTO customers VALUES (?, ?, ?)", ((i, f"c{{i}}@ex.com", pad) for i in range(ROWS)))
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?)", ((i, i % ROWS, "delivered") for i in range(ROWS)))


@tool(kind="read")
def get_order(ctx: ToolContext, order_id: int) -> dict:
    """Read an order.

    Args:
        order_id: The order id.
    """
    return dict(ctx.db.execute("SELECT * FROM orders WHERE id = ?", (order_id,)).fetchone())


@tool(kind="write")
def refund(ctx: ToolContext, order_id: int) -> str:
    """Refund an order.

    Args:
        order_id: The order id.
    """
    ctx.db.execute("INSERT INTO refunds (order_id) VALUES (?)", (order_id,))
    ctx.db.execute("UPDATE orders SET status = 'refunded' WHERE id = ?", (order_id,))
    return "ok"


domain = Domain(
    "big",
    schema="""
    CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, notes TEXT);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, status TEXT);
    CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id INTEGER);
    """,
    fixtures={{"default": load}},
    policy="Refund when asked.",
    tools=[get_order, refund],
)
'''

CASE = """id: case-{i:04d}
domain: {domain}
instruction: Refund order {i}.
assertions:
  - row_count: {{table: refunds, where: {{order_id: {i}}}, equals: 1}}
  - field_equals: {{table: orders, where: {{id: {i}}}, field: status, equals: refunded}}
"""


def write_suite(folder: Path, mb: int, cases: int) -> None:
    folder.mkdir(parents=True)
    (folder / "domain.py").write_text(DOMAIN.format(rows=mb * 1_000_000 // 4_900))
    for i in range(cases):
        spelling = "domain.py" if i % 2 else "./domain.py"
        (folder / f"case-{i:04d}.yaml").write_text(CASE.format(i=i, domain=spelling))


def peak_rss_mb() -> float:
    """VmHWM of this process (the peak resident set), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_load(folder: Path) -> dict[str, float]:
    from passhat.cases import load_suite

    t = time.perf_counter()
    suite = load_suite(str(folder))
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    suite.content_hash()
    hash_s = time.perf_counter() - t
    image = next(iter(suite.domains.values())).image("default")
    return {"load_s": load_s, "hash_s": hash_s, "image_mb": image.size_bytes / 1e6, "rss_mb": peak_rss_mb()}


def child_run(folder: Path, jobs: int, hold: float) -> dict[str, float]:
    from passhat.cases import load_suite
    from passhat.runner import RunConfig, execute

    async def agent(episode):  # noqa: ANN001, ANN202
        order = int(episode.instruction.split()[-1].rstrip("."))
        await episode.call("get_order", {"order_id": order})
        await asyncio.sleep(hold)  # the model thinking, with the world alive
        await episode.call("refund", {"order_id": order})
        return "Refunded."

    suite = load_suite(str(folder))
    suite.cases = suite.cases[: 2 * jobs]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(suite=suite, agent=agent, agent_spec="bench", trials=1, concurrency=jobs, out=Path(tmp) / "run")
        t = time.perf_counter()
        store = asyncio.run(execute(cfg))
        wall = time.perf_counter() - t
        passed = sum(r.outcome == "pass" for r in store.load())
    return {"wall_s": wall, "rss_mb": peak_rss_mb(), "passed": passed, "trials": len(suite.cases)}


def in_subprocess(*args: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--hold", type=float, default=0.3)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, folder, *rest = args.child
        result = child_load(Path(folder)) if mode == "load" else child_run(Path(folder), int(rest[0]), args.hold)
        print(json.dumps(result))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "suite"
        write_suite(folder, args.mb, args.cases)
        load = in_subprocess("load", str(folder))
        print(f"fixture image {load['image_mb']:.0f} MB, {args.cases} cases on it (two spellings of the domain path)")
        print(f"load_suite: {load['load_s']:.2f} s; suite hash: {load['hash_s']:.2f} s; "
              f"peak RSS after load + hash: {load['rss_mb']:.0f} MB ({load['rss_mb'] / load['image_mb']:.1f}× the image)")
        runs = {j: in_subprocess("run", str(folder), str(j), "--hold", str(args.hold)) for j in (4, 32)}
        print(f"{'-j':>4}{'trials':>8}{'passed':>8}{'wall s':>9}{'peak RSS MB':>13}{'× image':>9}")
        for j, r in runs.items():
            print(f"{j:>4}{r['trials']:>8.0f}{r['passed']:>8.0f}{r['wall_s']:>9.2f}{r['rss_mb']:>13.0f}"
                  f"{r['rss_mb'] / load['image_mb']:>9.1f}")
        print(f"peak RSS ratio -j 32 / -j 4: {runs[32]['rss_mb'] / runs[4]['rss_mb']:.2f} (1.0 = memory independent of -j)")


if __name__ == "__main__":
    main()
