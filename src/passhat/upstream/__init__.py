"""Upstream MCP servers: a team's own tools, served to the agent through passhat's tool boundary.

``Domain(mcp=Upstream("stdio:COMMAND ARGS" | "http://URL", env={...}))`` (docs/your-own-stack.md,
docs/design/020). Importing this package is cheap: the ``mcp`` SDK is imported only when a server starts.
"""

from passhat.upstream.config import Upstream

__all__ = ["Upstream"]
