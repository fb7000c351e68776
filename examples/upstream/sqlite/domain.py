"""The shop's back office on ``mcp-server-sqlite`` (PyPI): each trial's server opens the trial's own copy
of the shop database file (``{sqlite_path}``), built once per run from ../shop.

Install the server once, offline afterwards: ``bash examples/upstream/install-servers.sh`` (README.md);
``PASSHAT_MCP_SERVERS`` says where, if not ``~/.cache/passhat/mcp-servers``.
"""

import os
from pathlib import Path

from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.upstream import Upstream
from passhat.worlds import SqliteFile

SHOP = Path(__file__).resolve().parent.parent / "shop"
SERVERS = Path(os.environ.get("PASSHAT_MCP_SERVERS") or Path.home() / ".cache" / "passhat" / "mcp-servers")
SERVER = SERVERS / "sqlite" / "bin" / "mcp-server-sqlite"
if not SERVER.is_file():
    raise DomainError(f"{SERVER}: mcp-server-sqlite is not installed; run "
                      "bash examples/upstream/install-servers.sh (PASSHAT_MCP_SERVERS chooses the folder)")

domain = Domain(
    "shop_sqlite",
    schema=SHOP / "schema.sql",
    fixtures={"default": SqliteFile(data=SHOP / "shop.yaml", name="shop.db")},
    policy=SHOP / "policy.md",
    mcp=Upstream(
        f"stdio:{SERVER} --db-path {{sqlite_path}}", name="mcp-server-sqlite",
        # the server predates tool annotations: say which of its tools only read
        kinds={"read_query": "read", "list_tables": "read", "describe_table": "read"},
    ),
)
