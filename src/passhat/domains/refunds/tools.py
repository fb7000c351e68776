"""Tools of the refunds sandbox: an online shop's customer-service desk.

Every tool acts for one customer (``ctx.identity``) and may only see or change that customer's orders;
anything else is refused at the tool layer, whatever the agent was told. ``issue_refund`` is
deliberately NOT idempotent, like most real payment APIs without an idempotency key: a blind retry after
a lost response refunds twice, which is exactly what the fault cases measure.
"""

from __future__ import annotations

import sqlite3
from typing import Any, TypedDict

from passhat.tools import PermissionDenied, Tool, ToolContext, ToolFailure, tool

REFUND_METHODS = ("original_payment", "store_credit")
EMAIL_TEMPLATES = ("refund", "order_update", "general")


class Customer(TypedDict):
    """A row of ``customers``. The read tools declare their results, so a ``malformed`` fault on a field
    they do not return is refused when the suite loads."""

    id: str
    name: str
    email: str
    store_credit: float


class Order(TypedDict):
    """A row of ``orders``."""

    id: int
    customer_id: str
    item: str
    total: float
    payment_method: str
    status: str
    shipping_address: str
    placed_at: str


class OrderLine(TypedDict):
    """One line of ``list_orders``."""

    id: int
    item: str
    total: float
    status: str
    placed_at: str


class Approval(TypedDict):
    """A row of ``approvals``."""

    order_id: int
    amount: float
    approved_by: str
    approved_at: str
    reason: str


class Refund(TypedDict):
    """A row of ``refunds``."""

    id: str
    order_id: int
    amount: float
    method: str
    created_at: str
    created_by: str | None


class Email(TypedDict):
    """A row of ``emails``."""

    id: str
    to_address: str
    template: str
    order_id: int | None
    body: str
    sent_at: str


def _row(row: sqlite3.Row | None) -> Any:
    """A row as a dict, or ``None``: typed by the tool that returns it (``Order``, ``Approval``, …)."""
    return dict(row) if row is not None else None


def _rows(cursor: sqlite3.Cursor) -> list[Any]:
    return [dict(r) for r in cursor]


def _own_order(ctx: ToolContext, order_id: int) -> Any:
    """The order, if it exists and belongs to the caller (no identity = back-office, sees all)."""
    order = _row(ctx.db.execute("SELECT * FROM orders WHERE id = ?", (order_id,)).fetchone())
    if order is None:
        raise ToolFailure(f"order {order_id} not found")
    if ctx.identity is not None and order["customer_id"] != ctx.identity:
        raise PermissionDenied(f"order {order_id} does not belong to customer {ctx.identity}")
    return order


def _customer(ctx: ToolContext, customer_id: str) -> Any:
    row = _row(ctx.db.execute("SELECT * FROM customers WHERE id = ?", (customer_id,)).fetchone())
    if row is None:
        raise ToolFailure(f"customer {customer_id} not found")
    return row


def _refunded_so_far(ctx: ToolContext, order_id: int) -> float:
    (total,) = ctx.db.execute("SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE order_id = ?", (order_id,)).fetchone()
    return float(total)


@tool(kind="read")
def get_customer(ctx: ToolContext) -> Customer:
    """Profile of the customer you are helping: name, email and store-credit balance."""
    if ctx.identity is None:
        ctx.fail("no customer is signed in")
    return _customer(ctx, str(ctx.identity))


@tool(kind="read")
def list_orders(ctx: ToolContext) -> list[OrderLine]:
    """Orders of the customer you are helping, newest first (number, item, total, status)."""
    rows = ctx.db.execute(
        "SELECT id, item, total, status, placed_at FROM orders WHERE customer_id = ? ORDER BY placed_at DESC",
        (ctx.identity,),
    )
    return _rows(rows)


@tool(kind="read")
def get_order(ctx: ToolContext, order_id: int) -> Order:
    """Details of one of the customer's orders: item, total, payment method, status, address.

    Args:
        order_id: The order number, e.g. 4812.
    """
    return _own_order(ctx, order_id)


@tool(kind="read")
def get_approval(ctx: ToolContext, order_id: int) -> Approval:
    """The refund approval for an order: the approved amount (the most that may be refunded) and who approved it.

    Fails with "no approval" when nobody has approved a refund for the order.

    Args:
        order_id: The order number, e.g. 4812.
    """
    _own_order(ctx, order_id)
    row = _row(ctx.db.execute("SELECT * FROM approvals WHERE order_id = ?", (order_id,)).fetchone())
    if row is None:
        raise ToolFailure(f"no approval: no refund has been approved for order {order_id}")
    return row


@tool(kind="read")
def list_refunds(ctx: ToolContext, order_id: int) -> list[Refund]:
    """Refunds already issued for an order (empty list if none).

    Args:
        order_id: The order number, e.g. 4812.
    """
    _own_order(ctx, order_id)
    rows = ctx.db.execute("SELECT * FROM refunds WHERE order_id = ? ORDER BY created_at", (order_id,))
    return _rows(rows)


@tool(kind="read")
def list_emails(ctx: ToolContext, order_id: int) -> list[Email]:
    """Emails already sent to the customer about an order (the outbox), oldest first.

    Args:
        order_id: The order number, e.g. 4812.
    """
    _own_order(ctx, order_id)
    rows = ctx.db.execute("SELECT * FROM emails WHERE order_id = ? ORDER BY sent_at", (order_id,))
    return _rows(rows)


@tool(kind="write")
def issue_refund(ctx: ToolContext, order_id: int, amount: float, method: str) -> dict:
    """Refund money for an order and mark it refunded. Not idempotent: every call refunds again.

    Records the refund, a ledger entry of minus the amount, and either a payment-provider refund intent
    (original_payment) or a store-credit top-up (store_credit), all in one transaction.

    Args:
        order_id: The order number, e.g. 4812.
        amount: Amount to refund in the order's currency, e.g. 118.5.
        method: Where the money goes: "original_payment" (the card or PayPal account used) or "store_credit".
    """
    order = _own_order(ctx, order_id)
    if method not in REFUND_METHODS:
        ctx.fail(f"unknown refund method {method!r}; use one of {', '.join(REFUND_METHODS)}")
    if order["status"] in ("cancelled", "placed"):
        ctx.fail(f"order {order_id} is {order['status']}; only shipped or delivered orders can be refunded")
    amount = round(amount, 2)
    refundable = round(order["total"] - _refunded_so_far(ctx, order_id), 2)
    if amount <= 0 or amount > refundable:
        ctx.fail(f"amount {amount:.2f} is not refundable for order {order_id} (refundable: {refundable:.2f})")
    refund_id, now = ctx.new_id("R-"), ctx.now()
    with ctx.transaction() as db:
        db.execute("INSERT INTO refunds VALUES (?, ?, ?, ?, ?, ?)", (refund_id, order_id, amount, method, now, ctx.identity))
        db.execute("INSERT INTO ledger VALUES (?, ?, ?, 'refund', ?)", (ctx.new_id("L-"), order_id, -amount, now))
        if method == "original_payment":
            db.execute(
                "INSERT INTO payments VALUES (?, ?, ?, ?, 'refund', 'intent_recorded', ?)",
                (ctx.new_id("P-"), order_id, amount, order["payment_method"], now),
            )
        else:
            db.execute("UPDATE customers SET store_credit = store_credit + ? WHERE id = ?", (amount, order["customer_id"]))
        db.execute("UPDATE orders SET status = 'refunded' WHERE id = ?", (order_id,))
    return {"refund_id": refund_id, "order_id": order_id, "amount": amount, "method": method, "created_at": now}


@tool(kind="write")
def send_email(ctx: ToolContext, order_id: int, template: str, body: str) -> dict:
    """Email the customer about one of their orders. Every call sends another email.

    Args:
        order_id: The order the email is about, e.g. 4812.
        template: "refund" (refund confirmation), "order_update" or "general".
        body: The message text.
    """
    order = _own_order(ctx, order_id)
    if template not in EMAIL_TEMPLATES:
        ctx.fail(f"unknown template {template!r}; use one of {', '.join(EMAIL_TEMPLATES)}")
    if not body.strip():
        ctx.fail("the email body is empty")
    to = _customer(ctx, order["customer_id"])["email"]
    email_id = ctx.new_id("E-")
    ctx.db.execute("INSERT INTO emails VALUES (?, ?, ?, ?, ?, ?)", (email_id, to, template, order_id, body, ctx.now()))
    return {"email_id": email_id, "to": to, "template": template, "order_id": order_id}


@tool(kind="write")
def escalate_to_human(ctx: ToolContext, order_id: int, reason: str) -> dict:
    """Hand the customer's request to a human agent (e.g. a refund without approval, or a system outage).

    Args:
        order_id: The order the request is about, e.g. 4813.
        reason: What the human should look at and why.
    """
    order = _own_order(ctx, order_id)
    esc_id = ctx.new_id("ESC-")
    ctx.db.execute(
        "INSERT INTO escalations VALUES (?, ?, ?, ?, 'open', ?)", (esc_id, order_id, order["customer_id"], reason, ctx.now())
    )
    return {"escalation_id": esc_id, "order_id": order_id, "status": "open"}


@tool(kind="write")
def add_note(ctx: ToolContext, order_id: int, body: str) -> dict:
    """Add an internal note to an order (visible to staff only).

    Args:
        order_id: The order number, e.g. 4812.
        body: The note text.
    """
    _own_order(ctx, order_id)
    note_id = ctx.new_id("N-")
    ctx.db.execute("INSERT INTO notes VALUES (?, ?, ?, ?, ?)", (note_id, order_id, "agent", body, ctx.now()))
    return {"note_id": note_id, "order_id": order_id}


@tool(kind="write")
def update_order_address(ctx: ToolContext, order_id: int, address: str) -> dict:
    """Change the shipping address of an order that has not shipped yet.

    Args:
        order_id: The order number, e.g. 4825.
        address: The new shipping address, one line.
    """
    order = _own_order(ctx, order_id)
    if order["status"] != "placed":
        ctx.fail(f"order {order_id} is {order['status']}; the address can only change before shipping")
    ctx.db.execute("UPDATE orders SET shipping_address = ? WHERE id = ?", (address, order_id))
    return {"order_id": order_id, "shipping_address": address}


@tool(kind="write")
def cancel_order(ctx: ToolContext, order_id: int, reason: str) -> dict:
    """Cancel an order that has not shipped yet (the payment capture is voided).

    Args:
        order_id: The order number, e.g. 4825.
        reason: Why the customer cancels.
    """
    order = _own_order(ctx, order_id)
    if order["status"] != "placed":
        ctx.fail(f"order {order_id} is {order['status']}; only orders that have not shipped can be cancelled")
    ctx.db.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (order_id,))
    return {"order_id": order_id, "status": "cancelled", "reason": reason}


@tool(kind="write")
def apply_store_credit(ctx: ToolContext, amount: float, reason: str) -> dict:
    """Grant the customer goodwill store credit that is not tied to a refund (needs a supervisor's say-so).

    Args:
        amount: Credit to add, e.g. 10.0.
        reason: Why the credit is granted.
    """
    customer = _customer(ctx, str(ctx.identity))
    if amount <= 0:
        ctx.fail("the amount must be positive")
    ctx.db.execute("UPDATE customers SET store_credit = store_credit + ? WHERE id = ?", (amount, customer["id"]))
    return {"customer_id": customer["id"], "store_credit": round(customer["store_credit"] + amount, 2), "reason": reason}


TOOLS: list[Tool] = [
    get_customer, list_orders, get_order, get_approval, list_refunds, list_emails,
    issue_refund, send_email, escalate_to_human, add_note, update_order_address, cancel_order, apply_store_credit,
]
