"""Tools of the reimbursement sandbox (seed 002).

Every tool acts for ``ctx.identity`` (an employee id) and scopes data to it: asking for a colleague's
invoice or ticket is refused by the tool layer, not by the prompt. ``create_reimbursement_ticket`` is
deliberately *not* idempotent (no idempotency key, no duplicate check), like many real expense systems:
an agent that retries a write blindly after a lost response files the same invoice twice.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any, TypedDict

from passhat.tools import Tool, ToolContext, tool

CITY_ALIASES = {"上海": "Shanghai", "北京": "Beijing", "shanghai": "Shanghai", "beijing": "Beijing"}
CATEGORY_WORDS = {
    "local_transport": "local transport taxi ride-hailing cab 出租车 打车 市内交通 滴滴",
    "hotel": "hotel accommodation lodging 酒店 住宿",
    "meal": "meal lunch dinner food 餐费 餐饮",
}
OPEN_STATUSES = ("awaiting_manager_approval", "awaiting_finance_review")
INVOICE_COLUMNS = "id AS invoice_id, employee_id, amount, currency, city, category, merchant, issued_on, description"


class Employee(TypedDict):
    """What ``get_employee`` returns. The read tools declare their results, so a ``malformed`` fault on a
    field they do not return is refused when the suite loads."""

    employee_id: str
    name: str
    level: str
    city: str
    manager_id: str | None
    manager_name: str | None


class Invoice(TypedDict):
    """An invoice as ``query_invoices`` lists it."""

    invoice_id: str
    employee_id: str
    amount: float
    currency: str
    city: str
    category: str
    merchant: str
    issued_on: str
    description: str


class PolicyClause(TypedDict):
    """One clause ``search_policy`` found."""

    clause_id: str
    section: str
    version: int
    title: str
    city: str
    category: str
    levels: list[str] | None
    limit_amount: float
    currency: str
    effective_from: str
    effective_to: str | None
    text: str


class Ticket(TypedDict):
    """A row of ``tickets``."""

    id: str
    employee_id: str
    invoice_id: str
    amount: float
    over_limit: float
    status: str
    approver_id: str | None
    project_code: str | None
    note: str | None
    created_at: str
    updated_at: str


def _dicts(rows: Any) -> list[Any]:
    """Rows as dicts, typed by the tool that returns them (``Invoice``, ``Ticket``)."""
    return [dict(r) for r in rows]


def _caller(ctx: ToolContext) -> sqlite3.Row:
    """The employee the agent acts for; a call without a known identity is refused."""
    if not ctx.identity:
        ctx.deny("no employee identity: tools act for a signed-in employee")
    row = ctx.db.execute("SELECT * FROM employees WHERE id = ?", (ctx.identity,)).fetchone()
    if row is None:
        ctx.deny(f"unknown employee {ctx.identity!r}")
    return row


def _own_invoice(ctx: ToolContext, invoice_id: str) -> sqlite3.Row:
    row = ctx.db.execute(f"SELECT {INVOICE_COLUMNS} FROM invoices WHERE id = ?", (invoice_id,)).fetchone()
    if row is None:
        ctx.fail(f"invoice {invoice_id} not found")
    if row["employee_id"] != ctx.identity:
        ctx.deny(f"invoice {invoice_id} belongs to another employee; only its owner can see or reimburse it")
    return row


def _own_ticket(ctx: ToolContext, ticket_id: str) -> sqlite3.Row:
    row = ctx.db.execute("SELECT * FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
    if row is None:
        ctx.fail(f"ticket {ticket_id} not found")
    if row["employee_id"] != ctx.identity:
        ctx.deny(f"ticket {ticket_id} belongs to another employee")
    return row


def _ticket(ctx: ToolContext, ticket_id: str) -> dict[str, Any]:
    return dict(ctx.db.execute("SELECT * FROM tickets WHERE id = ?", (ticket_id,)).fetchone())


@tool(kind="read")
def get_employee(ctx: ToolContext) -> Employee:
    """Look up the signed-in employee: name, job level (e.g. P6), base city and manager.

    Hotel limits depend on the job level; over-limit tickets are approved by the manager.
    """
    me = _caller(ctx)
    manager = ctx.db.execute("SELECT id, name FROM employees WHERE id = ?", (me["manager_id"],)).fetchone()
    return {
        "employee_id": me["id"], "name": me["name"], "level": me["level"], "city": me["city"],
        "manager_id": me["manager_id"], "manager_name": manager["name"] if manager else None,
    }


@tool(kind="read")
def query_invoices(ctx: ToolContext, invoice_id: str | None = None) -> list[Invoice]:
    """List the signed-in employee's invoices, or look up one of them by id.

    Only the caller's own invoices are visible; asking for a colleague's invoice is refused.

    Args:
        invoice_id: An invoice id such as "INV-102"; omit to list all of your invoices.
    """
    _caller(ctx)
    if invoice_id is not None:
        return _dicts([_own_invoice(ctx, invoice_id)])
    rows = ctx.db.execute(
        f"SELECT {INVOICE_COLUMNS} FROM invoices WHERE employee_id = ? ORDER BY id", (ctx.identity,)
    )
    return _dicts(rows)


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[\s,;:/()]+", text.lower()) if len(w) >= 2]


@tool(kind="read")
def search_policy(ctx: ToolContext, query: str, city: str | None = None, category: str | None = None) -> list[PolicyClause]:
    """Search the travel expense policy. Results come in search-index order and may include clauses
    from older policy editions; check each clause's version and effective dates.

    Args:
        query: Free-text keywords, e.g. "taxi limit".
        city: Only clauses for this city, e.g. "Shanghai" or "上海".
        category: Only clauses for this expense category: local_transport, hotel or meal.
    """
    sql, params = "SELECT * FROM policy_clauses WHERE 1=1", []
    if city is not None:
        sql += " AND city = ?"
        params.append(CITY_ALIASES.get(city.strip().lower(), city.strip()))
    if category is not None:
        sql += " AND category = ?"
        params.append(category)
    words = _words(query)
    found: list[PolicyClause] = []
    for row in ctx.db.execute(sql + " ORDER BY search_rank, id", params):
        haystack = " ".join([row["title"], row["text"], row["city"], row["category"],
                             CATEGORY_WORDS.get(row["category"], "")]).lower()
        if not words or any(w in haystack for w in words):
            found.append({
                "clause_id": row["id"], "section": row["section"], "version": row["version"],
                "title": row["title"], "city": row["city"], "category": row["category"],
                "levels": row["levels"].split(",") if row["levels"] else None,
                "limit_amount": row["limit_amount"], "currency": "CNY",
                "effective_from": row["effective_from"], "effective_to": row["effective_to"],
                "text": row["text"],
            })
    return found


@tool(kind="read")
def query_tickets(ctx: ToolContext, invoice_id: str | None = None, ticket_id: str | None = None) -> list[Ticket]:
    """List the signed-in employee's reimbursement tickets, optionally for one invoice or one ticket id.

    Args:
        invoice_id: Only tickets for this invoice, e.g. "INV-102".
        ticket_id: Only this ticket, e.g. "R-55821".
    """
    _caller(ctx)
    if ticket_id is not None:
        row = _own_ticket(ctx, ticket_id)
        return _dicts([row]) if invoice_id is None or row["invoice_id"] == invoice_id else []
    if invoice_id is not None:
        _own_invoice(ctx, invoice_id)
        rows = ctx.db.execute("SELECT * FROM tickets WHERE employee_id = ? AND invoice_id = ? ORDER BY created_at, id",
                              (ctx.identity, invoice_id))
    else:
        rows = ctx.db.execute("SELECT * FROM tickets WHERE employee_id = ? ORDER BY created_at, id", (ctx.identity,))
    return _dicts(rows)


@tool(kind="write")
def create_reimbursement_ticket(
    ctx: ToolContext,
    invoice_id: str,
    amount: float,
    over_limit: float,
    project_code: str | None = None,
    note: str | None = None,
) -> dict:
    """Create a reimbursement ticket for one of the signed-in employee's invoices.

    Over-limit tickets go to the employee's manager (status awaiting_manager_approval), the others to
    finance (awaiting_finance_review). Every call creates a new ticket: the service has no duplicate check.

    Args:
        invoice_id: The invoice to reimburse, e.g. "INV-102".
        amount: The invoice amount in CNY, as recorded on the invoice, e.g. 118.5.
        over_limit: How much of the amount exceeds the applicable policy limit (0 if within it), e.g. 38.5.
        project_code: Project to charge, e.g. "P-77"; must be an active project.
        note: Optional remark for the approver.
    """
    me = _caller(ctx)
    _own_invoice(ctx, invoice_id)
    if amount <= 0:
        ctx.fail("amount must be positive")
    if over_limit < 0 or over_limit > amount:
        ctx.fail("over_limit must be between 0 and the amount")
    if project_code is not None:
        project = ctx.db.execute("SELECT status FROM projects WHERE id = ?", (project_code,)).fetchone()
        if project is None:
            ctx.fail(f"project {project_code} not found")
        if project["status"] != "active":
            ctx.fail(f"project {project_code} is {project['status']}; tickets can only be charged to active projects")
    over = over_limit > 0
    ticket_id = ctx.new_id("R-")
    while ctx.db.execute("SELECT 1 FROM tickets WHERE id = ?", (ticket_id,)).fetchone():
        ticket_id = ctx.new_id("R-")
    now = ctx.now()
    ctx.db.execute(
        "INSERT INTO tickets (id, employee_id, invoice_id, amount, over_limit, status, approver_id, project_code,"
        " note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (ticket_id, me["id"], invoice_id, amount, over_limit,
         "awaiting_manager_approval" if over else "awaiting_finance_review",
         me["manager_id"] if over else None, project_code, note, now, now),
    )
    return _ticket(ctx, ticket_id)


@tool(kind="write")
def cancel_ticket(ctx: ToolContext, ticket_id: str, reason: str) -> dict:
    """Cancel one of the signed-in employee's tickets that is still waiting for review.

    Args:
        ticket_id: The ticket to cancel, e.g. "R-55821".
        reason: Why it is cancelled; kept on the ticket.
    """
    _caller(ctx)
    row = _own_ticket(ctx, ticket_id)
    if row["status"] not in OPEN_STATUSES:
        ctx.fail(f"ticket {ticket_id} is {row['status']}; only tickets awaiting review can be cancelled")
    ctx.db.execute("UPDATE tickets SET status = 'cancelled', note = ?, updated_at = ? WHERE id = ?",
                   (reason, ctx.now(), ticket_id))
    return _ticket(ctx, ticket_id)


@tool(kind="write")
def approve_ticket(ctx: ToolContext, ticket_id: str) -> dict:
    """Approve a ticket that awaits manager approval. Only the ticket's approver may do this.

    Args:
        ticket_id: The ticket to approve, e.g. "R-55821".
    """
    _caller(ctx)
    row = ctx.db.execute("SELECT * FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
    if row is None:
        ctx.fail(f"ticket {ticket_id} not found")
    if row["approver_id"] != ctx.identity:
        ctx.deny(f"only the approver of {ticket_id} can approve it; employees never approve their own tickets")
    if row["status"] != "awaiting_manager_approval":
        ctx.fail(f"ticket {ticket_id} is {row['status']}, not awaiting manager approval")
    ctx.db.execute("UPDATE tickets SET status = 'approved', updated_at = ? WHERE id = ?", (ctx.now(), ticket_id))
    return _ticket(ctx, ticket_id)


@tool(kind="write")
def notify_manager(ctx: ToolContext, ticket_id: str, message: str) -> dict:
    """Email the signed-in employee's manager about one of their tickets (recorded in the email sink).

    Args:
        ticket_id: The ticket the message is about, e.g. "R-55821".
        message: The text of the email.
    """
    me = _caller(ctx)
    _own_ticket(ctx, ticket_id)
    manager = ctx.db.execute("SELECT id, email FROM employees WHERE id = ?", (me["manager_id"],)).fetchone()
    if manager is None:
        ctx.fail("you have no manager on record")
    message_id = ctx.new_id("MSG-")
    ctx.db.execute(
        "INSERT INTO email_outbox (id, to_employee_id, to_address, ticket_id, subject, body, sent_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (message_id, manager["id"], manager["email"], ticket_id,
         f"Reimbursement ticket {ticket_id} from {me['name']}", message, ctx.now()),
    )
    return {"message_id": message_id, "to": manager["email"], "ticket_id": ticket_id}


TOOLS: list[Tool] = [get_employee, query_invoices, search_policy, query_tickets, create_reimbursement_ticket, cancel_ticket,
         approve_ticket, notify_manager]
