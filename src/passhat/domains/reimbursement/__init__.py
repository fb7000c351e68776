"""The reimbursement sandbox (seed 002): employees file expense invoices against a versioned travel policy.

Fixtures: ``default`` (the seed's world) and ``stale_index`` (the same data, but the policy search
index still ranks the outdated 2025 clauses first, so an agent that trusts the first hit uses the wrong
limit).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import yaml

from passhat.domain import Domain
from passhat.domains.reimbursement.tools import TOOLS
from passhat.world.image import insert_rows

HERE = Path(__file__).parent
DEFAULT_FIXTURE = HERE / "fixtures" / "default.yaml"


def stale_index(conn: sqlite3.Connection) -> None:
    """The default world with a search index built before the 2026 edition took over."""
    data = yaml.safe_load(DEFAULT_FIXTURE.read_text("utf-8"))
    insert_rows(conn, data["tables"], str(DEFAULT_FIXTURE))
    conn.execute("UPDATE policy_clauses SET search_rank = search_rank - 100 WHERE version < 2026")


domain = Domain(
    "reimbursement",
    schema=HERE / "schema.sql",
    fixtures={"default": DEFAULT_FIXTURE, "stale_index": stale_index},
    policy=HERE / "policy.md",
    tools=TOOLS,
    start=datetime(2026, 10, 31, 9, 0, 0),
)

__all__ = ["domain"]
