"""World kinds beyond the in-memory SQLite default (docs/worlds.md, docs/design/019).

``Postgres(...)`` and ``SqliteFile(...)`` are fixture sources for ``Domain(fixtures={name: ...})``; the
workspace kind is declared with ``Domain(workspace=...)``. Each kind implements
:mod:`passhat.world.kind`; nothing above the world seam knows which one a trial has.
"""

from passhat.worlds.postgres.source import Postgres
from passhat.worlds.sqlite_file import SqliteFile

__all__ = ["Postgres", "SqliteFile"]
