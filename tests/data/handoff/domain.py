"""A tiny help desk whose agent can hand the conversation to a human (a tool that ends the episode)."""

from pathlib import Path

from passhat.domain import Domain
from passhat.tools import ToolContext, tool

HERE = Path(__file__).parent


@tool(kind="read")
def get_ticket(ctx: ToolContext, ticket_id: str) -> dict:
    """Read a support ticket.

    Args:
        ticket_id: The ticket's id, e.g. "T-1".
    """
    row = ctx.db.execute("SELECT id, subject, status FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
    if row is None:
        ctx.fail(f"ticket {ticket_id} not found")
    return dict(row)


@tool(kind="write")
def close_ticket(ctx: ToolContext, ticket_id: str) -> dict:
    """Close a ticket.

    Args:
        ticket_id: The ticket's id.
    """
    ctx.db.execute("UPDATE tickets SET status = 'closed' WHERE id = ?", (ticket_id,))
    return {"id": ticket_id, "status": "closed"}


@tool(kind="write", ends_episode=True)
def transfer_to_human(ctx: ToolContext, summary: str) -> dict:
    """Hand the conversation to a human colleague. The conversation ends here.

    Args:
        summary: What the human needs to know.
    """
    ctx.db.execute("INSERT INTO handoffs (summary, at) VALUES (?, ?)", (summary, ctx.now()))
    return {"transferred": True}


domain = Domain(
    "handoff",
    schema="""
    CREATE TABLE tickets (id TEXT PRIMARY KEY, subject TEXT, status TEXT);
    CREATE TABLE handoffs (seq INTEGER PRIMARY KEY, summary TEXT, at TEXT);
    """,
    fixtures={"default": HERE / "fixture.yaml"},
    policy="Tickets that mention legal matters go to a human: transfer them, never close them yourself.",
    tools=[get_ticket, close_ticket, transfer_to_human],
)
