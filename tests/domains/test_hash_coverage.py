"""A domain's hash covers what decides its verdicts (issue 12 item 6, docs/design/014).

The domain below keeps its business rule in a helper module and its orders in a JSON file that the
fixture function reads: editing either changes verdicts, so either must change the hash; touching
files or loading again must not.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DOMAIN = '''
import json
from pathlib import Path

from passhat.domain import Domain
from passhat.tools import ToolContext, tool
from shop_rules_{tag} import rules

HERE = Path(__file__).parent


def load(conn):
    for order in json.loads((HERE / "orders.json").read_text()):
        conn.execute("INSERT INTO orders VALUES (?, ?)", (order["id"], order["total"]))


@tool(kind="write")
def refund(ctx: ToolContext, order_id: int) -> str:
    """Refund an order if the rules allow it.

    Args:
        order_id: The order id.
    """
    total = ctx.db.execute("SELECT total FROM orders WHERE id = ?", (order_id,)).fetchone()[0]
    if not rules.may_refund(total):
        ctx.fail("over the refund limit")
    ctx.db.execute("INSERT INTO refunds (order_id) VALUES (?)", (order_id,))
    return "refunded"


domain = Domain(
    "shop",
    schema="CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL); "
           "CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id INTEGER);",
    fixtures={{"default": load}},
    policy="Refund within the limit.",
    tools=[refund],
)
'''

RULES = "LIMIT = 100\n\n\ndef may_refund(total):\n    return total <= LIMIT\n"
ORDERS = [{"id": 1, "total": 40.0}, {"id": 2, "total": 90.0}]
CASE = """id: refund-2
domain: ../domain.py
instruction: Refund order 2.
assertions:
  - row_count: {table: refunds, where: {order_id: 2}, equals: 1}
"""


@pytest.fixture
def shop(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """The shop domain folder (helper module named per test, so tests never share Python's module cache)."""
    tag = request.node.name.replace("[", "_").replace("]", "").replace("-", "_")
    root = tmp_path / "shop"
    (root / f"shop_rules_{tag}").mkdir(parents=True)
    (root / f"shop_rules_{tag}" / "__init__.py").write_text("")
    (root / f"shop_rules_{tag}" / "rules.py").write_text(RULES)
    (root / "domain.py").write_text(DOMAIN.format(tag=tag))
    (root / "orders.json").write_text(json.dumps(ORDERS))
    (root / "cases").mkdir()
    (root / "cases" / "refund-2.yaml").write_text(CASE)
    before = set(sys.modules)
    yield root
    for name in set(sys.modules) - before:
        if name.startswith(f"shop_rules_{tag}"):
            del sys.modules[name]


def domain_hash(root: Path) -> str:
    from passhat.domain import load_domain

    return load_domain(str(root / "domain.py")).content_hash()


def rules_file(root: Path) -> Path:
    return next(root.glob("shop_rules_*/rules.py"))


def test_changing_one_value_in_the_data_a_fixture_function_loads_changes_the_hash(shop: Path) -> None:
    before = domain_hash(shop)
    (shop / "orders.json").write_text(json.dumps([ORDERS[0], {**ORDERS[1], "total": 190.0}]))
    assert domain_hash(shop) != before


def test_changing_a_helper_module_the_tools_import_changes_the_hash(shop: Path) -> None:
    from passhat.domain import load_domain

    domain = load_domain(str(shop / "domain.py"))
    assert rules_file(shop).resolve() in domain.source_files().values()
    before = domain.content_hash()
    rules_file(shop).write_text(RULES.replace("LIMIT = 100", "LIMIT = 50"))
    assert domain_hash(shop) != before


def test_declared_data_files_are_covered(shop: Path) -> None:
    (shop / "rates.csv").write_text("eur,1.0\n")
    text = (shop / "domain.py").read_text()
    (shop / "domain.py").write_text(text.replace('tools=[refund],', 'tools=[refund], files=[HERE / "rates.csv"],'))
    before = domain_hash(shop)
    (shop / "rates.csv").write_text("eur,1.1\n")
    assert domain_hash(shop) != before


def test_touching_reloading_or_moving_the_domain_leaves_the_hash_unchanged(shop: Path, tmp_path: Path) -> None:
    first = domain_hash(shop)
    for f in (shop / "domain.py", shop / "orders.json", rules_file(shop)):
        os.utime(f, (1_000_000_000, 1_000_000_000))
    assert domain_hash(shop) == first  # touched, and loaded a second time (helpers now in Python's module cache)
    # an unrelated module beside the domain, imported first, is not the domain's code
    (shop / "my_agent.py").write_text("async def agent(ep):\n    return 'ok'\n")
    from passhat.agents import python_agent

    python_agent(f"{shop / 'my_agent.py'}:agent")
    assert domain_hash(shop) == first
    moved = tmp_path / "elsewhere" / "shop"
    shutil.copytree(shop, moved)
    assert domain_hash(moved) == first  # the hash names files by their place in the folder, not on disk


def test_the_fixture_hash_is_of_the_state_not_of_how_it_was_built() -> None:
    from datetime import datetime

    from passhat.world import FixtureImage

    schema = "CREATE TABLE t (id INTEGER PRIMARY KEY, v REAL)"

    def plain(conn: Any) -> None:
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, 1.0), (2, 2.0)])

    def churned(conn: Any) -> None:  # same final rows, different pages and free list
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, float(i)) for i in range(1, 2000)])
        conn.execute("DELETE FROM t WHERE id > 2")

    def other(conn: Any) -> None:
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, 1.0), (2, 2.5)])

    start = datetime(2026, 1, 1)
    a, b, c = (FixtureImage.build("f", schema, f, start) for f in (plain, churned, other))
    assert a.image != b.image and a.content_hash() == b.content_hash()
    assert c.content_hash() != a.content_hash()
    assert FixtureImage.build("f", schema, plain, datetime(2026, 1, 2)).content_hash() != a.content_hash()


def test_a_run_on_changed_data_is_reported_as_a_changed_domain(shop: Path, tmp_path: Path) -> None:
    from passhat.cases import load_suite
    from passhat.compare.runs import CompareError, load_run, match_cases
    from passhat.runner import RunConfig, execute
    from passhat.suites.changes import changed_cases, describe_changes

    async def agent(episode: Any) -> str:
        await episode.call("refund", {"order_id": 2})
        return "done"

    def run(out: Path) -> Path:
        cfg = RunConfig(suite=load_suite(str(shop / "cases")), agent=agent, agent_spec="refunder", trials=1, out=out)
        asyncio.run(execute(cfg))
        return out

    before = run(tmp_path / "before")
    (shop / "orders.json").write_text(json.dumps([ORDERS[0], {**ORDERS[1], "total": 190.0}]))
    after = run(tmp_path / "after")
    base, cand = load_run(before), load_run(after)
    assert base.tallies["refund-2"].passes == 1 and cand.tallies["refund-2"].fails == 1  # the verdict moved
    changes = changed_cases(base.suite, cand.suite)
    assert changes.domains_changed == ["../domain.py"]
    assert changes.fixtures_changed == {"../domain.py": ["default"]}
    assert changes.affected_by_domain == {"refund-2": "../domain.py"}
    assert "domain '../domain.py' changed (fixtures: default)" in describe_changes(changes)
    with pytest.raises(CompareError, match="changed"):
        match_cases(base, cand, allow_changed_cases=False)
    with pytest.raises(CompareError, match="no case"):  # the one case is not comparable
        match_cases(base, cand, allow_changed_cases=True)
