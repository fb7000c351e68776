"""The tool server as a sandboxed agent sees it: one trial's URLs and nothing else.

A confined agent (docs/design/021) reaches the tool server only through a unix socket bound for its
trial. Connections on that socket are served by the same router as the TCP port, but a request for any
path outside ``/trials/{id}`` of that trial — another live trial's URL, with its token or without — gets
404 before it reaches the router: a leaked URL and token are worth nothing from inside a sandbox.
"""

from __future__ import annotations

from typing import Any

from passhat.serve.app import ASGIApp, Receive, Scope, Send, send_json


class ScopedApp:
    """ASGI app for the trial sockets: routes by the socket a connection arrived on."""

    def __init__(self, router: ASGIApp) -> None:
        self.router = router
        self.sockets: dict[str, str] = {}
        """Socket path → the id of the only trial it reaches."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server: Any = scope.get("server")
        trial = self.sockets.get(server[0]) if server else None
        prefix = f"/trials/{trial}"
        path = scope.get("path", "")
        if trial is not None and (path == prefix or path.startswith(prefix + "/")):
            await self.router(scope, receive, send)
        elif scope["type"] == "http":
            await send_json(send, 404, {"ok": False, "error": "from a sandbox only the trial's own endpoint is reachable"})


__all__ = ["ScopedApp"]
