"""A domain's upstream tools, listed once per run, and what the domain's hash covers of them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from passhat.upstream.session import list_tools
from passhat.upstream.tools import UpstreamTool

if TYPE_CHECKING:
    from passhat.domain import Domain


def server_folder(domain: Domain) -> Path | None:
    """Where an upstream's command runs unless it says (``Upstream(cwd=...)``): the domain's folder, so
    ``stdio:{python} server.py`` finds the server beside ``domain.py`` from any working directory."""
    return domain.code_root.folder if domain.code_root is not None else None


def listed_tools(domain: Domain) -> dict[str, UpstreamTool]:
    """Start each upstream on a scratch world of the domain's first fixture, list and check its tools,
    stop it. Raises :class:`~passhat.errors.DomainError` (bad input, exit 2) naming the server and tool."""
    world = domain.restore(domain.fixture_names[0], seed=0)
    try:
        return list_tools(domain.upstreams, domain=domain.name, native=domain._native_tools, world=world,
                          cwd=server_folder(domain))
    finally:
        world.close()


def upstream_hash(domain: Domain) -> str:
    """Hash of the upstreams as declared (commands and environment with their placeholders) and of the
    tools they listed (names, kinds, descriptions, schemas): a server that changes its tools changes the
    suite's hash, as an edited ``@tool`` does."""
    h = hashlib.sha256()
    for u in domain.upstreams:
        h.update(f"upstream {u.describe()}\n".encode())
    for _, t in sorted(domain.tools.items()):
        if isinstance(t, UpstreamTool):
            spec = {**t.spec(), "description": t.stable_description, "server": t.server, "idempotent": t.idempotent,
                    "output": t.output_schema}
            h.update(json.dumps(spec, sort_keys=True, default=str).encode())
    return h.hexdigest()
