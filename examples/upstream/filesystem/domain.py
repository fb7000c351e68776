"""A folder of notes, documents and settings, served by the reference filesystem MCP server
(``@modelcontextprotocol/server-filesystem`` from npm): each trial's server gets the trial's private copy
of ``workspace/`` as its one allowed directory, and the diff of that copy is what the cases grade.

The server is installed once, offline afterwards: ``bash examples/upstream/install-servers.sh`` (see
README.md beside this folder); ``PASSHAT_MCP_SERVERS`` says where, if not ``~/.cache/passhat/mcp-servers``.
"""

import os
from pathlib import Path

from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.upstream import Upstream

HERE = Path(__file__).resolve().parent
SERVERS = Path(os.environ.get("PASSHAT_MCP_SERVERS") or Path.home() / ".cache" / "passhat" / "mcp-servers")
SERVER = SERVERS / "filesystem" / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
if not SERVER.is_file():
    raise DomainError(f"{SERVER}: the filesystem MCP server is not installed; run "
                      "bash examples/upstream/install-servers.sh (PASSHAT_MCP_SERVERS chooses the folder)")

domain = Domain(
    "files",
    workspace=HERE / "workspace",
    policy=HERE / "policy.md",
    tools=[],
    mcp=Upstream(f"stdio:node {SERVER} {{workspace}}", name="filesystem"),
)
