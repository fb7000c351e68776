"""A domain whose tools return personal data, for redaction tests."""

from pathlib import Path

from passhat.domain import Domain
from passhat.tools import ToolContext, tool


@tool(kind="read")
def get_customer(ctx: ToolContext, customer_id: str) -> dict:
    """Read a customer record, contact details included.

    Args:
        customer_id: The customer's id, e.g. "C-1".
    """
    row = ctx.db.execute("SELECT * FROM customers WHERE id = ?", (customer_id,)).fetchone()
    if row is None:
        ctx.fail(f"customer {customer_id} not found")
    return dict(row)


@tool(kind="write")
def send_receipt(ctx: ToolContext, to: str, body: str) -> dict:
    """Send a receipt by e-mail (to the sandbox's outbox).

    Args:
        to: Recipient address.
        body: Message text.
    """
    ctx.db.execute("INSERT INTO outbox (id, recipient, body) VALUES (?, ?, ?)", (ctx.new_id("M-"), to, body))
    return {"sent": True}


domain = Domain(
    "pii",
    schema="""
    CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT, email TEXT, phone TEXT, card TEXT);
    CREATE TABLE outbox (id TEXT PRIMARY KEY, recipient TEXT, body TEXT);
    """,
    fixtures={"default": Path(__file__).parent / "fixture.yaml"},
    policy="Send receipts to the customer's address on file.",
    tools=[get_customer, send_receipt],
)
