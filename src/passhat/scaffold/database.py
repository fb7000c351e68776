"""A team's database read for a starter suite: its schema and rows, and how a domain declares it.

A path is a SQLite file (opened read-only); a ``postgresql://`` URL a PostgreSQL database (its schema by
``pg_dump --schema-only``, its rows by ``SELECT``). Nothing is written to the database.
"""

from __future__ import annotations

import datetime
import decimal
import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passhat.errors import PasshatError


@dataclass
class Dump:
    """What a starter suite needs of a database."""

    placeholder: str
    """``sqlite_path`` or ``database_url``: how each trial's private copy reaches the server."""
    schema: str
    rows: dict[str, list[dict[str, Any]]]
    columns: dict[str, list[str]]
    fixture_source: str
    """The fixture's value in ``Domain(fixtures={"default": ...})``, as Python source."""
    fixture_import: str = ""


def dump_database(db: str) -> Dump:
    if db.startswith(("postgresql://", "postgres://")):
        return _postgres(db)
    path = Path(db)
    if not path.is_file():
        raise PasshatError(f"--db {db}: not a SQLite file nor a postgresql:// URL")
    return _sqlite(path)


def parents_first(tables: list[str], refers: dict[str, set[str]]) -> list[str]:
    """``tables`` ordered so a table comes after the tables its foreign keys refer to (the fixture's rows
    are inserted in this order); a cycle keeps the rest in their given order."""
    done: list[str] = []
    pending = list(tables)
    while pending:
        ready = [t for t in pending if not (refers.get(t, set()) - {t}) - set(done)]
        if not ready:  # a cycle: nothing can go first; keep the order given
            done += pending
            break
        done += ready
        pending = [t for t in pending if t not in ready]
    return done


def _plain(value: Any) -> Any:
    """A value YAML writes and reads back as it was."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    return value


def _sqlite(path: Path) -> Dump:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            objects = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE "
                                   "'sqlite_%' ORDER BY type = 'table' DESC, rowid").fetchall()
            tables = [name for kind, name, _ in objects if kind == "table"]
            refers = {t: {r[2] for r in conn.execute(f'PRAGMA foreign_key_list("{t}")')} for t in tables}
            tables = parents_first(tables, refers)
            rows: dict[str, list[dict[str, Any]]] = {}
            columns: dict[str, list[str]] = {}
            for table in tables:
                cursor = conn.execute(f'SELECT * FROM "{table}"')
                columns[table] = [d[0] for d in cursor.description]
                rows[table] = [{c: _plain(v) for c, v in zip(columns[table], row, strict=True)} for row in cursor]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise PasshatError(f"--db {path}: cannot read it as a SQLite database: {exc}") from None
    schema = "".join(f"{sql};\n\n" for _, _, sql in objects)
    return Dump("sqlite_path", schema, rows, columns, f'SqliteFile(data=HERE / "fixtures" / "default.yaml", name={path.name!r})',
                "from passhat.worlds import SqliteFile")


def pg_dump() -> str | None:
    """``pg_dump`` on PATH, or in Debian's PostgreSQL folders."""
    found = shutil.which("pg_dump")
    if found:
        return found
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / "pg_dump").is_file():
            return str(folder / "pg_dump")
    return None


def _postgres(url: str) -> Dump:
    try:
        import psycopg
    except ImportError:
        raise PasshatError("--db postgresql://…: reading a PostgreSQL database needs psycopg "
                           "(pip install 'passhat[postgres]')") from None
    binary = pg_dump()
    if binary is None:
        raise PasshatError("--db postgresql://…: pg_dump is needed for the schema and is not on PATH")
    done = subprocess.run([binary, "--schema-only", "--no-owner", "--no-privileges", "--dbname", url],
                          capture_output=True, text=True, env={**os.environ, "PGCONNECT_TIMEOUT": "10"})
    if done.returncode != 0:
        raise PasshatError(f"--db {url}: pg_dump failed: {done.stderr.strip()}")
    schema = "\n".join(line for line in done.stdout.splitlines()
                       if not line.startswith(("SET ", "SELECT pg_catalog.set_config", "\\restrict", "\\unrestrict")))
    rows: dict[str, list[dict[str, Any]]] = {}
    columns: dict[str, list[str]] = {}
    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                "AND table_type = 'BASE TABLE' ORDER BY table_name")]
            refers: dict[str, set[str]] = {t: set() for t in tables}
            for child, parent in conn.execute(
                    "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c "
                    "JOIN pg_namespace n ON n.oid = c.connamespace WHERE c.contype = 'f' AND n.nspname = 'public'"):
                refers.setdefault(child.removeprefix("public."), set()).add(parent.removeprefix("public."))
            for table in parents_first(tables, refers):
                cursor = conn.execute(f'SELECT * FROM "{table}" ORDER BY 1')
                columns[table] = [d.name for d in cursor.description or []]
                rows[table] = [{c: _plain(v) for c, v in zip(columns[table], row, strict=True)} for row in cursor]
    except psycopg.Error as exc:
        raise PasshatError(f"--db {url}: {exc}") from None
    return Dump("database_url", schema.strip() + "\n", rows, columns, 'Postgres(data=HERE / "fixtures" / "default.yaml")',
                "from passhat.worlds import Postgres")
