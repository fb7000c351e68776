"""``Postgres(...)``: a fixture that lives in PostgreSQL, declared in ``Domain(fixtures={name: ...})``.

Give a schema and data — ``data=`` a YAML file like a SQLite fixture's (``now`` and ``tables``), or a
``.sql`` file of inserts — or a ``dump=`` from ``pg_dump`` (custom or plain format, with or without
``schema=`` before it). Nothing connects until the fixture is first used: the server is chosen then
(``--pg-url``, ``PASSHAT_PG_URL``, or a throwaway cluster), so a domain file imports anywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from passhat.errors import DomainError
from passhat.world.fixture_file import read_fixture
from passhat.world.kind import Facet

Strategy = Literal["wal_log", "file_copy"]


@dataclass(frozen=True)
class Postgres:
    """A PostgreSQL fixture: ``Postgres(schema=HERE / "schema.sql", data=HERE / "fixtures/default.yaml")``."""

    schema: str | Path | None = None
    """The schema (SQL text or a file); ``None``: the domain's ``schema=``, unless a ``dump`` holds it."""
    data: Path | None = None
    """Rows: a YAML fixture (``now``, ``tables``) or a ``.sql`` file run after the schema."""
    dump: Path | None = None
    """A ``pg_dump`` file (any format ``pg_restore`` reads, or plain SQL), loaded after ``schema``."""
    now: datetime | None = None
    """Where the trial clock starts (a YAML fixture's ``now`` wins; default: the domain's start)."""
    strategy: Strategy | None = None
    """How trial databases are cloned (PostgreSQL 15+): ``file_copy`` (a checkpoint, then a file copy:
    fastest on a throwaway cluster, which does not flush) or ``wal_log`` (block by block through the WAL:
    no checkpoint on a shared server). Default: ``file_copy`` on a throwaway cluster, else the server's own."""
    kind = "postgres"
    facet: Facet = "rows"

    def __post_init__(self) -> None:
        for label, path in (("data", self.data), ("dump", self.dump)):
            if path is not None and not Path(path).exists():
                raise DomainError(f"Postgres({label}={str(path)!r}): no such file")
        if isinstance(self.schema, Path) and not self.schema.is_file():
            raise DomainError(f"Postgres(schema={str(self.schema)!r}): no such file")
        if self.strategy not in (None, "wal_log", "file_copy"):
            raise DomainError(f"Postgres(strategy={self.strategy!r}): use 'wal_log' or 'file_copy'")

    def describe(self) -> str:
        where = self.dump or self.data or self.schema
        return f"a PostgreSQL fixture ({where})" if isinstance(where, Path) else "a PostgreSQL fixture"

    def build(self, fixture: str, schema: str, start: datetime) -> Any:
        """Build the template on this process's server (started now if it is a throwaway cluster)."""
        from passhat.worlds.postgres import server as servers
        from passhat.worlds.postgres.slots import Slots
        from passhat.worlds.postgres.template import create_template
        from passhat.worlds.postgres.world import PgImage

        where = f"fixture {fixture!r} ({self.describe()})"
        schema_sql = self._schema_text(schema)
        data, start = self._data(start)
        server = servers.current()
        group = server.world_role()
        template, tables, digest = create_template(server, group, schema_sql, data,
                                                   Path(self.dump) if self.dump else None, where, start)
        strategy = self.strategy or os.environ.get("PASSHAT_PG_STRATEGY") or ("file_copy" if server.cluster else None)
        return PgImage(server, template, tables, start, digest, Slots(server, template, group, strategy), where)

    def _schema_text(self, domain_schema: str) -> str:
        if isinstance(self.schema, Path):
            return self.schema.read_text("utf-8")
        if isinstance(self.schema, str):
            return self.schema
        return "" if self.dump is not None else domain_schema

    def _data(self, start: datetime) -> tuple[Any, datetime]:
        """The rows (a ``{table: [rows]}`` mapping, SQL text, or ``None``) and the clock's start."""
        start = self.now or start
        if self.data is None:
            return None, start
        path = Path(self.data)
        if path.suffix == ".sql":
            return path.read_text("utf-8"), start
        return read_fixture(path, start)
