"""A PostgreSQL test domain whose every trial leaves a marker of its own: concurrent trials that saw each
other's database would show a foreign marker (or a second balance change) in their diff."""

from pathlib import Path

from passhat.domain import Domain
from passhat.tools import ToolContext, tool
from passhat.worlds import Postgres

HERE = Path(__file__).resolve().parent

SCHEMA = """
CREATE TABLE accounts (id integer PRIMARY KEY, owner text NOT NULL, balance numeric(12, 2) NOT NULL, pad text);
CREATE TABLE markers (label text PRIMARY KEY, account_id integer REFERENCES accounts(id), made_at text);
INSERT INTO accounts SELECT g, 'owner ' || g, 100, repeat(md5(g::text), 20) FROM generate_series(1, 2000) g;
"""


@tool(kind="write")
def mark(ctx: ToolContext, label: str, account_id: int) -> dict:
    """Leave this trial's marker and move 1.00 out of one account.

    Args:
        label: The marker, unique to the trial.
        account_id: The account to debit.
    """
    ctx.db.execute("INSERT INTO markers VALUES (?, ?, ?)", (label, account_id, ctx.now()))
    ctx.db.execute("UPDATE accounts SET balance = balance - 1 WHERE id = ?", (account_id,))
    (seen,) = ctx.db.execute("SELECT COUNT(*) FROM markers").fetchone()
    return {"markers_seen": seen}


domain = Domain("pg_markers", fixtures={"default": Postgres(schema=SCHEMA)}, policy="Leave one marker.",
                tools=[mark])
