#!/usr/bin/env bash
# Install the third-party MCP servers the examples and tests in examples/upstream use, each in a place of
# its own (a virtualenv per Python server, as `uvx` would; an npm prefix for the Node one), never into
# passhat's environment: they pin their own dependencies (mcp-server-sqlite wants the mcp 1.x SDK).
#
#   bash examples/upstream/install-servers.sh [FOLDER]     # default: $PASSHAT_MCP_SERVERS or ~/.cache/passhat/mcp-servers
#
# Needs the package registries once; runs offline afterwards. Re-running only checks the pins.
set -euo pipefail
FOLDER="${1:-${PASSHAT_MCP_SERVERS:-$HOME/.cache/passhat/mcp-servers}}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$FOLDER"
cd "$FOLDER"

venv() {  # venv NAME PACKAGE...: a virtualenv of its own with the packages in it
  local name="$1"; shift
  if [ ! -x "$name/bin/python" ]; then "$PYTHON" -m venv "$name"; fi
  "$name/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

# mcp-server-sqlite does not pin the SDK it was written for; the 2.x SDK breaks it (Server.list_resources)
venv sqlite 'mcp-server-sqlite==2025.4.25' 'mcp>=1.6,<2'
# mcp-alchemy speaks to any SQLAlchemy database; psycopg2 is its PostgreSQL driver
venv alchemy 'mcp-alchemy==2026.10.15.202659' 'psycopg2-binary>=2.9'
FS=filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
if [ ! -f "$FS" ]; then
  mkdir -p filesystem
  npm install --silent --no-audit --no-fund --prefix filesystem '@modelcontextprotocol/server-filesystem@2026.8.31'
fi
echo "MCP servers in $FOLDER: sqlite/bin/mcp-server-sqlite, alchemy/bin/mcp-alchemy, $FS"
