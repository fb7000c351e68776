"""The built-in ``refunds`` desk with its tools served by our own MCP server (server.py beside this file)
over PostgreSQL: the same schema (in PostgreSQL's types), fixture, policy and cases as the built-in
domain, so the two give the same verdicts (tests/upstream/test_refunds_pg.py).

One server process serves the whole run over HTTP (``shared=True``): each trial's requests carry its own
database and customer in headers, so a trial costs one MCP session instead of a server start (the
``mcp`` SDK takes about a second of CPU to import). ``STDIO`` below is the same server started per trial.

    passhat run refunds --agent careful   # the built-in domain
    python examples/upstream/refunds_pg/parity.py   # this one, case by case beside it
"""

from datetime import datetime
from pathlib import Path

from passhat.domain import Domain
from passhat.domains.refunds import HERE as BUILTIN
from passhat.upstream import Upstream
from passhat.worlds import Postgres

HERE = Path(__file__).resolve().parent
WORLD = {"X-Database-Url": "{database_url}", "X-Identity": "{identity}", "X-Seed": "{seed}", "X-Now": "{now}"}

SHARED = Upstream("http://127.0.0.1:{port}/mcp", name="refunds-pg", shared=True,
                  start=f"{{python}} {HERE / 'server.py'} --http {{port}}", headers=WORLD)
STDIO = Upstream(f"stdio:{{python}} {HERE / 'server.py'}", name="refunds-pg",
                 env={"DATABASE_URL": "{database_url}", "REFUNDS_IDENTITY": "{identity}", "REFUNDS_SEED": "{seed}",
                      "REFUNDS_NOW": "{now}"})


def refunds(upstream: Upstream) -> Domain:
    return Domain(
        "refunds",  # the built-in's name: its cases and reference agents apply unchanged
        schema=HERE / "schema.sql",
        fixtures={"default": Postgres(data=BUILTIN / "fixtures" / "default.yaml")},
        policy=BUILTIN / "policy.md",
        mcp=upstream,
        start=datetime(2026, 10, 31, 9, 0, 0),
    )


domain = refunds(SHARED)
