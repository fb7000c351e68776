"""A payment service that honours idempotency keys: a retry with the same key is safe, a fresh key pays again."""

from pathlib import Path

from passhat.domain import Domain
from passhat.tools import ToolContext, tool


@tool(kind="read")
def get_invoice(ctx: ToolContext, invoice_id: str) -> dict:
    """Read an invoice.

    Args:
        invoice_id: The invoice, e.g. "I-1".
    """
    row = ctx.db.execute("SELECT * FROM invoices WHERE id = ?", (invoice_id,)).fetchone()
    if row is None:
        ctx.fail(f"invoice {invoice_id} not found")
    return dict(row)


@tool(kind="write")
def pay(ctx: ToolContext, invoice_id: str, amount: float, idempotency_key: str) -> dict:
    """Pay an invoice. A second call with the same idempotency key returns the first payment.

    Args:
        invoice_id: The invoice to pay.
        amount: Amount in USD.
        idempotency_key: A key you choose; reuse it when you retry.
    """
    seen = ctx.db.execute("SELECT id FROM payments WHERE idempotency_key = ?", (idempotency_key,)).fetchone()
    if seen is not None:
        return {"payment_id": seen[0]}
    payment_id = ctx.new_id("P-")
    ctx.db.execute("INSERT INTO payments VALUES (?, ?, ?, ?)", (payment_id, invoice_id, amount, idempotency_key))
    return {"payment_id": payment_id}


domain = Domain(
    "payments",
    schema="""
    CREATE TABLE invoices (id TEXT PRIMARY KEY, amount REAL);
    CREATE TABLE payments (id TEXT PRIMARY KEY, invoice_id TEXT, amount REAL, idempotency_key TEXT);
    """,
    fixtures={"default": Path(__file__).parent / "fixture.yaml"},
    policy="Pay the invoice once. Reuse the idempotency key when you retry a payment.",
    tools=[get_invoice, pay],
)
