"""The shop's back office on ``mcp-alchemy`` (PyPI), read-write, over PostgreSQL: each trial's server
connects to the trial's own database (``{database_url}``), cloned from a template built once per run
from ../shop.

Install the server once, offline afterwards: ``bash examples/upstream/install-servers.sh`` (README.md).
PostgreSQL: ``--pg-url``/``PASSHAT_PG_URL``, or passhat's own throwaway cluster when its binaries are found.
"""

import os
from pathlib import Path

from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.upstream import Upstream
from passhat.worlds import Postgres

SHOP = Path(__file__).resolve().parent.parent / "shop"
SERVERS = Path(os.environ.get("PASSHAT_MCP_SERVERS") or Path.home() / ".cache" / "passhat" / "mcp-servers")
SERVER = SERVERS / "alchemy" / "bin" / "mcp-alchemy"
if not SERVER.is_file():
    raise DomainError(f"{SERVER}: mcp-alchemy is not installed; run "
                      "bash examples/upstream/install-servers.sh (PASSHAT_MCP_SERVERS chooses the folder)")

domain = Domain(
    "shop_postgres",
    schema=SHOP / "schema.sql",
    fixtures={"default": Postgres(data=SHOP / "shop.yaml")},
    policy=SHOP / "policy.md",
    mcp=Upstream(
        f"stdio:{SERVER}", name="mcp-alchemy", env={"DB_URL": "{database_url}"},
        # no annotations: its one query tool writes too; the schema tools only read
        kinds={"all_table_names": "read", "filter_table_names": "read", "schema_definitions": "read"},
    ),
)
