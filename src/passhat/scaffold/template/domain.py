"""A starter domain: a help desk where the agent acts for one employee.

Replace the schema, fixture, policy and tools with your own system. Keep every tool a typed, documented
function: passhat generates the schema the agent sees from the hints and the docstring.
"""

from pathlib import Path

from passhat.domain import Domain
from passhat.tools import ToolContext, tool

HERE = Path(__file__).parent


@tool(kind="read")
def list_tickets(ctx: ToolContext) -> list[dict]:
    """List the caller's support tickets, newest first."""
    rows = ctx.db.execute(
        "SELECT id, title, status, priority FROM tickets WHERE owner = ? ORDER BY created_at DESC", (ctx.identity,)
    )
    return [dict(r) for r in rows]


@tool(kind="write")
def open_ticket(ctx: ToolContext, title: str, priority: int = 2) -> dict:
    """Open a support ticket for the caller.

    Args:
        title: What the problem is, in a few words.
        priority: 1 (low) to 3 (urgent).
    """
    if not 1 <= priority <= 3:
        ctx.fail("priority must be 1, 2 or 3")
    ticket_id = ctx.new_id("T-", 4)
    ctx.db.execute(
        "INSERT INTO tickets (id, owner, title, status, priority, created_at) VALUES (?, ?, ?, 'open', ?, ?)",
        (ticket_id, ctx.identity, title, priority, ctx.now()),
    )
    return {"ticket_id": ticket_id, "status": "open"}


@tool(kind="write")
def close_ticket(ctx: ToolContext, ticket_id: str) -> dict:
    """Close one of the caller's tickets.

    Args:
        ticket_id: The ticket to close, e.g. "T-1001".
    """
    row = ctx.db.execute("SELECT owner FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
    if row is None:
        ctx.fail(f"ticket {ticket_id} not found")
    if row["owner"] != ctx.identity:
        ctx.deny(f"ticket {ticket_id} belongs to someone else")
    ctx.db.execute("UPDATE tickets SET status = 'closed' WHERE id = ?", (ticket_id,))
    return {"ticket_id": ticket_id, "status": "closed"}


domain = Domain(
    "helpdesk",
    schema=HERE / "schema.sql",
    fixtures={"default": HERE / "fixtures" / "default.yaml"},
    policy=HERE / "policy.md",
    tools=[list_tickets, open_ticket, close_ticket],
)
