#!/usr/bin/env bash
# Install what the framework recipes in examples/agents need, each in its own folder (never into passhat's
# environment: the frameworks pin their own SDKs, e.g. langchain-mcp-adapters wants the mcp 1.x SDK):
#
#   bash examples/agents/install-recipes.sh
#
# - pydantic_ai_mcp/.venv and langgraph_mcp/.venv: a virtual environment per Python recipe, from its
#   requirements.txt. Inside the repository on purpose: a cmd: agent's sandbox hides the temporary folder
#   and $HOME, so an agent's own environment must live elsewhere (docs/agents.md).
# - node_mcp/node_modules: the TypeScript MCP SDK pinned in node_mcp/package.json (needs npm).
#
# Needs the package registries once; runs offline afterwards. Re-running only checks the pins.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON="${PYTHON:-python3}"
for recipe in pydantic_ai_mcp langgraph_mcp; do
  if [ ! -x "$HERE/$recipe/.venv/bin/python" ]; then "$PYTHON" -m venv "$HERE/$recipe/.venv"; fi
  "$HERE/$recipe/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/$recipe/requirements.txt"
done
if command -v npm >/dev/null 2>&1; then
  npm install --silent --no-audit --no-fund --prefix "$HERE/node_mcp"
else
  echo "warning: npm not found: the TypeScript MCP SDK recipe (node_mcp) is not installed" >&2
fi
echo "recipes installed: $HERE/pydantic_ai_mcp/.venv, $HERE/langgraph_mcp/.venv, $HERE/node_mcp/node_modules"
