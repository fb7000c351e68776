"""World kinds beyond the in-memory SQLite default (docs/worlds.md, docs/design/019).

``Postgres(...)`` and ``SqliteFile(...)`` are fixture sources for ``Domain(fixtures={name: ...})``; the
workspace kind is declared with ``Domain(workspace=...)``. Each kind implements
:mod:`passhat.world.kind`; nothing above the world seam knows which one a trial has. Imported on first
use, so a domain without them loads none of their modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from passhat.worlds.postgres.source import Postgres
    from passhat.worlds.sqlite_file import SqliteFile

__all__ = ["Postgres", "SqliteFile"]


def __getattr__(name: str) -> Any:
    if name == "Postgres":
        from passhat.worlds.postgres.source import Postgres

        return Postgres
    if name == "SqliteFile":
        from passhat.worlds.sqlite_file import SqliteFile

        return SqliteFile
    raise AttributeError(f"module 'passhat.worlds' has no attribute {name!r}")
