"""The built-in refunds domain on a PostgreSQL copy of its fixture: the same schema (REAL as double
precision: PostgreSQL's REAL is single precision), the same fixture file, the same policy and the same
native tools, unchanged (their SQL is portable and ``ctx.db`` speaks sqlite3's interface on PostgreSQL)."""

from passhat.domain import Domain
from passhat.domains.refunds import HERE as REFUNDS
from passhat.domains.refunds import domain as refunds
from passhat.domains.refunds.tools import TOOLS
from passhat.worlds import Postgres

SCHEMA = (REFUNDS / "schema.sql").read_text("utf-8").replace(" REAL ", " DOUBLE PRECISION ")

domain = Domain(
    "refunds",
    fixtures={"default": Postgres(schema=SCHEMA, data=REFUNDS / "fixtures" / "default.yaml")},
    policy=REFUNDS / "policy.md",
    tools=TOOLS,
    start=refunds.start,
)
