"""The built-in ``refunds`` shop desk as an MCP server of its own, over PostgreSQL (the ``mcp`` SDK's
``MCPServer`` and ``psycopg``): the same tools, arguments, rules and error texts as
``passhat/domains/refunds/tools.py``, so an agent cannot tell them apart — which is what the parity test
checks (tests/upstream/test_refunds_pg.py).

    python server.py                  # stdio: one server per trial (DATABASE_URL, REFUNDS_IDENTITY, ...)
    python server.py --http PORT      # streamable HTTP: one server for a whole run, each request
                                      # naming its trial's database and customer in headers

Where the trial's state is, and who the agent acts for, comes from the environment (stdio) or from the
``X-Database-Url``, ``X-Identity``, ``X-Seed`` and ``X-Now`` headers (HTTP). Each trial's connection is
opened on its first call and kept (passhat drops a trial's database with its sessions). Clock and IDs
are per trial and deterministic, like passhat's own: the clock starts at the fixture's time and moves one
second per call; IDs start at a number drawn from the trial's seed.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from psycopg.rows import dict_row

REFUND_METHODS = ("original_payment", "store_credit")
EMAIL_TEMPLATES = ("refund", "order_update", "general")
READ = ToolAnnotations(read_only_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, idempotent_hint=False)

server = MCPServer("refunds-pg", instructions="An online shop's customer-service desk, one customer at a time.")


@dataclass
class Trial:
    """One trial's desk: its database, the customer, its clock and its IDs."""

    url: str
    identity: str | None
    now: datetime
    rng: random.Random
    next_ids: dict[str, int] = field(default_factory=dict)
    conn: psycopg.Connection[dict[str, Any]] | None = None

    def tick(self) -> None:
        self.now += timedelta(seconds=1)

    def iso(self) -> str:
        return self.now.isoformat()

    def new_id(self, prefix: str, digits: int = 5) -> str:
        if prefix not in self.next_ids:
            low = 10 ** (digits - 1)
            self.next_ids[prefix] = self.rng.randrange(low, 10**digits - 10 ** (digits - 2))
        value = self.next_ids[prefix]
        self.next_ids[prefix] = value + 1
        return f"{prefix}{value}"


TRIALS: OrderedDict[tuple[str, str], Trial] = OrderedDict()
"""Per trial (database URL and identity), most recent last, for the HTTP server that serves many."""
TRIALS_KEPT = 64
_LOCK = threading.Lock()  # the SDK runs each call of a plain function on a worker thread


def trial_of(ctx: Context) -> Trial:
    headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
    url = headers.get("x-database-url") or os.environ.get("DATABASE_URL", "")
    if not url:
        raise ToolError("no database: set DATABASE_URL (stdio) or send X-Database-Url (HTTP)")
    identity = headers.get("x-identity", os.environ.get("REFUNDS_IDENTITY", "")) or None
    key = (url, identity or "")
    with _LOCK:
        if key not in TRIALS:
            seed = int(headers.get("x-seed") or os.environ.get("REFUNDS_SEED") or 0)
            start = headers.get("x-now") or os.environ.get("REFUNDS_NOW") or "2026-10-31T09:00:00"
            TRIALS[key] = Trial(url, identity, datetime.fromisoformat(start), random.Random(seed))
            while len(TRIALS) > TRIALS_KEPT:  # trials long over: their databases are gone
                _, old = TRIALS.popitem(last=False)
                if old.conn is not None:
                    old.conn.close()
        TRIALS.move_to_end(key)
        trial = TRIALS[key]
    trial.tick()
    return trial


@contextmanager
def desk(ctx: Context) -> Iterator[tuple[Trial, psycopg.Connection[dict[str, Any]]]]:
    """The trial and its connection, in one transaction: committed when the call returns, rolled back when
    it raises (a refused call leaves nothing behind, as in passhat's boundary). The connection is kept for
    the trial's next call; passhat drops the trial's database with its sessions when the trial ends."""
    trial = trial_of(ctx)
    if trial.conn is None or trial.conn.closed:
        trial.conn = psycopg.connect(trial.url, row_factory=dict_row, autocommit=False)
    with trial.conn.transaction():
        yield trial, trial.conn


def _own_order(trial: Trial, db: psycopg.Connection[dict[str, Any]], order_id: int) -> dict[str, Any]:
    """The order, if it exists and belongs to the caller (no identity = back-office, sees all)."""
    order = db.execute("SELECT * FROM orders WHERE id = %s", (order_id,)).fetchone()
    if order is None:
        raise ToolError(f"order {order_id} not found")
    if trial.identity is not None and order["customer_id"] != trial.identity:
        raise ToolError(f"permission denied: order {order_id} does not belong to customer {trial.identity}")
    return order


def _customer(db: psycopg.Connection[dict[str, Any]], customer_id: str) -> dict[str, Any]:
    row = db.execute("SELECT * FROM customers WHERE id = %s", (customer_id,)).fetchone()
    if row is None:
        raise ToolError(f"customer {customer_id} not found")
    return row


def _refunded_so_far(db: psycopg.Connection[dict[str, Any]], order_id: int) -> float:
    row = db.execute("SELECT COALESCE(SUM(amount), 0) AS total FROM refunds WHERE order_id = %s", (order_id,)).fetchone()
    return float(row["total"]) if row else 0.0


@server.tool(annotations=READ)
def get_customer(ctx: Context) -> dict[str, Any]:
    """Profile of the customer you are helping: name, email and store-credit balance."""
    with desk(ctx) as (trial, db):
        if trial.identity is None:
            raise ToolError("no customer is signed in")
        return _customer(db, trial.identity)


@server.tool(annotations=READ)
def list_orders(ctx: Context) -> list[dict[str, Any]]:
    """Orders of the customer you are helping, newest first (number, item, total, status)."""
    with desk(ctx) as (trial, db):
        return db.execute("SELECT id, item, total, status, placed_at FROM orders WHERE customer_id = %s "
                          "ORDER BY placed_at DESC", (trial.identity,)).fetchall()


@server.tool(annotations=READ)
def get_order(order_id: int, ctx: Context) -> dict[str, Any]:
    """Details of one of the customer's orders: item, total, payment method, status, address.

    Args:
        order_id: The order number, e.g. 4812.
    """
    with desk(ctx) as (trial, db):
        return _own_order(trial, db, order_id)


@server.tool(annotations=READ)
def get_approval(order_id: int, ctx: Context) -> dict[str, Any]:
    """The refund approval for an order: the approved amount (the most that may be refunded) and who approved it.

    Fails with "no approval" when nobody has approved a refund for the order.

    Args:
        order_id: The order number, e.g. 4812.
    """
    with desk(ctx) as (trial, db):
        _own_order(trial, db, order_id)
        row = db.execute("SELECT * FROM approvals WHERE order_id = %s", (order_id,)).fetchone()
        if row is None:
            raise ToolError(f"no approval: no refund has been approved for order {order_id}")
        return row


@server.tool(annotations=READ)
def list_refunds(order_id: int, ctx: Context) -> list[dict[str, Any]]:
    """Refunds already issued for an order (empty list if none).

    Args:
        order_id: The order number, e.g. 4812.
    """
    with desk(ctx) as (trial, db):
        _own_order(trial, db, order_id)
        return db.execute("SELECT * FROM refunds WHERE order_id = %s ORDER BY created_at", (order_id,)).fetchall()


@server.tool(annotations=READ)
def list_emails(order_id: int, ctx: Context) -> list[dict[str, Any]]:
    """Emails already sent to the customer about an order (the outbox), oldest first.

    Args:
        order_id: The order number, e.g. 4812.
    """
    with desk(ctx) as (trial, db):
        _own_order(trial, db, order_id)
        return db.execute("SELECT * FROM emails WHERE order_id = %s ORDER BY sent_at", (order_id,)).fetchall()


@server.tool(annotations=WRITE)
def issue_refund(order_id: int, amount: float, method: str, ctx: Context) -> dict[str, Any]:
    """Refund money for an order and mark it refunded. Not idempotent: every call refunds again.

    Records the refund, a ledger entry of minus the amount, and either a payment-provider refund intent
    (original_payment) or a store-credit top-up (store_credit), all in one transaction.

    Args:
        order_id: The order number, e.g. 4812.
        amount: Amount to refund in the order's currency, e.g. 118.5.
        method: Where the money goes: "original_payment" (the card or PayPal account used) or "store_credit".
    """
    with desk(ctx) as (trial, db):
        order = _own_order(trial, db, order_id)
        if method not in REFUND_METHODS:
            raise ToolError(f"unknown refund method {method!r}; use one of {', '.join(REFUND_METHODS)}")
        if order["status"] in ("cancelled", "placed"):
            raise ToolError(f"order {order_id} is {order['status']}; only shipped or delivered orders can be refunded")
        amount = round(amount, 2)
        refundable = round(order["total"] - _refunded_so_far(db, order_id), 2)
        if amount <= 0 or amount > refundable:
            raise ToolError(f"amount {amount:.2f} is not refundable for order {order_id} (refundable: {refundable:.2f})")
        refund_id, now = trial.new_id("R-"), trial.iso()
        db.execute("INSERT INTO refunds VALUES (%s, %s, %s, %s, %s, %s)",
                   (refund_id, order_id, amount, method, now, trial.identity))
        db.execute("INSERT INTO ledger VALUES (%s, %s, %s, 'refund', %s)", (trial.new_id("L-"), order_id, -amount, now))
        if method == "original_payment":
            db.execute("INSERT INTO payments VALUES (%s, %s, %s, %s, 'refund', 'intent_recorded', %s)",
                       (trial.new_id("P-"), order_id, amount, order["payment_method"], now))
        else:
            db.execute("UPDATE customers SET store_credit = store_credit + %s WHERE id = %s", (amount, order["customer_id"]))
        db.execute("UPDATE orders SET status = 'refunded' WHERE id = %s", (order_id,))
        return {"refund_id": refund_id, "order_id": order_id, "amount": amount, "method": method, "created_at": now}


@server.tool(annotations=WRITE)
def send_email(order_id: int, template: str, body: str, ctx: Context) -> dict[str, Any]:
    """Email the customer about one of their orders. Every call sends another email.

    Args:
        order_id: The order the email is about, e.g. 4812.
        template: "refund" (refund confirmation), "order_update" or "general".
        body: The message text.
    """
    with desk(ctx) as (trial, db):
        order = _own_order(trial, db, order_id)
        if template not in EMAIL_TEMPLATES:
            raise ToolError(f"unknown template {template!r}; use one of {', '.join(EMAIL_TEMPLATES)}")
        if not body.strip():
            raise ToolError("the email body is empty")
        to = _customer(db, order["customer_id"])["email"]
        email_id = trial.new_id("E-")
        db.execute("INSERT INTO emails VALUES (%s, %s, %s, %s, %s, %s)", (email_id, to, template, order_id, body, trial.iso()))
        return {"email_id": email_id, "to": to, "template": template, "order_id": order_id}


@server.tool(annotations=WRITE)
def escalate_to_human(order_id: int, reason: str, ctx: Context) -> dict[str, Any]:
    """Hand the customer's request to a human agent (e.g. a refund without approval, or a system outage).

    Args:
        order_id: The order the request is about, e.g. 4813.
        reason: What the human should look at and why.
    """
    with desk(ctx) as (trial, db):
        order = _own_order(trial, db, order_id)
        esc_id = trial.new_id("ESC-")
        db.execute("INSERT INTO escalations VALUES (%s, %s, %s, %s, 'open', %s)",
                   (esc_id, order_id, order["customer_id"], reason, trial.iso()))
        return {"escalation_id": esc_id, "order_id": order_id, "status": "open"}


@server.tool(annotations=WRITE)
def add_note(order_id: int, body: str, ctx: Context) -> dict[str, Any]:
    """Add an internal note to an order (visible to staff only).

    Args:
        order_id: The order number, e.g. 4812.
        body: The note text.
    """
    with desk(ctx) as (trial, db):
        _own_order(trial, db, order_id)
        note_id = trial.new_id("N-")
        db.execute("INSERT INTO notes VALUES (%s, %s, %s, %s, %s)", (note_id, order_id, "agent", body, trial.iso()))
        return {"note_id": note_id, "order_id": order_id}


@server.tool(annotations=WRITE)
def update_order_address(order_id: int, address: str, ctx: Context) -> dict[str, Any]:
    """Change the shipping address of an order that has not shipped yet.

    Args:
        order_id: The order number, e.g. 4825.
        address: The new shipping address, one line.
    """
    with desk(ctx) as (trial, db):
        order = _own_order(trial, db, order_id)
        if order["status"] != "placed":
            raise ToolError(f"order {order_id} is {order['status']}; the address can only change before shipping")
        db.execute("UPDATE orders SET shipping_address = %s WHERE id = %s", (address, order_id))
        return {"order_id": order_id, "shipping_address": address}


@server.tool(annotations=WRITE)
def cancel_order(order_id: int, reason: str, ctx: Context) -> dict[str, Any]:
    """Cancel an order that has not shipped yet (the payment capture is voided).

    Args:
        order_id: The order number, e.g. 4825.
        reason: Why the customer cancels.
    """
    with desk(ctx) as (trial, db):
        order = _own_order(trial, db, order_id)
        if order["status"] != "placed":
            raise ToolError(f"order {order_id} is {order['status']}; only orders that have not shipped can be cancelled")
        db.execute("UPDATE orders SET status = 'cancelled' WHERE id = %s", (order_id,))
        return {"order_id": order_id, "status": "cancelled", "reason": reason}


@server.tool(annotations=WRITE)
def apply_store_credit(amount: float, reason: str, ctx: Context) -> dict[str, Any]:
    """Grant the customer goodwill store credit that is not tied to a refund (needs a supervisor's say-so).

    Args:
        amount: Credit to add, e.g. 10.0.
        reason: Why the credit is granted.
    """
    with desk(ctx) as (trial, db):
        customer = _customer(db, str(trial.identity))
        if amount <= 0:
            raise ToolError("the amount must be positive")
        db.execute("UPDATE customers SET store_credit = store_credit + %s WHERE id = %s", (amount, customer["id"]))
        return {"customer_id": customer["id"], "store_credit": round(customer["store_credit"] + amount, 2), "reason": reason}


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port, stateless_http=True, json_response=True)
    else:
        server.run()
