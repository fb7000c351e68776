"""The refunds sandbox (seed 000): refund an approved amount for order 4812, once, and notify once.

A small online shop: customers, orders, refund approvals, refunds, a ledger, a payment adapter that
records intents, an email sink, notes and escalations to a human. The cases grade the final state:
one refund of exactly the approved amount, the order marked refunded, the ledger balanced, one email,
and nothing else touched.
"""

from datetime import datetime
from pathlib import Path

from passhat.domain import Domain
from passhat.domains.refunds.tools import TOOLS

HERE = Path(__file__).resolve().parent

domain = Domain(
    "refunds",
    schema=HERE / "schema.sql",
    fixtures={"default": HERE / "fixtures" / "default.yaml"},
    policy=HERE / "policy.md",
    tools=TOOLS,
    start=datetime(2026, 10, 31, 9, 0, 0),
)

__all__ = ["domain"]
