"""Building a PostgreSQL fixture into a template database, once per run.

The template is made from ``template0`` (UTF-8, ``C`` collation: the same order on every machine), as
the harness's role, which therefore owns every table. The schema runs, then the data: YAML rows (as a
SQLite fixture's), a SQL file, or a ``pg_dump`` file (custom format through ``pg_restore``, plain
through ``psql``, both without owners or privileges). Then the change log is installed
(``changelog.py``), the trials' group role gets read and write access to the tables and sequences
(never to ``_passhat``), and the database is marked a template nobody may connect to.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from passhat.errors import DomainError
from passhat.worlds.postgres import changelog
from passhat.worlds.postgres.catalog import PgTable, read_tables, state_hash
from passhat.worlds.postgres.changelog import quote_ident
from passhat.worlds.postgres.cluster import client_tool
from passhat.worlds.postgres.diff import lookup_sql
from passhat.worlds.postgres.server import PgServer, drop_database, psycopg


def create_template(server: PgServer, group: str | None, schema_sql: str, data: Any, dump: Path | None,
                    where: str, start: datetime) -> tuple[str, dict[str, PgTable], str]:
    """A new template database holding the fixture; returns its name, tables and state hash. ``where``
    names the fixture in errors; nothing is left behind when it fails."""
    name = server.new_name("tpl")
    admin = server.connect()
    admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING \'UTF8\' LC_COLLATE \'C\' LC_CTYPE \'C\'')
    try:
        with server.connect(name) as conn:
            conn.execute("SET TimeZone = 'UTC'")
            _load(server, conn, name, schema_sql, data, dump, where)
            tables = read_tables(conn)
            digest = state_hash(conn, tables, start)  # before the harness's own objects are added
            changelog.install(conn, [(t.schema, t.table, t.name, t.key) for t in tables.values()],
                              {t.name: lookup_sql(t) for t in tables.values()})
            if group is not None:
                _grant(conn, group, {t.schema for t in tables.values()} | {"public"})
            conn.execute("VACUUM ANALYZE")
        admin.execute(f'ALTER DATABASE "{name}" IS_TEMPLATE true ALLOW_CONNECTIONS false')
        admin.execute(f'REVOKE ALL ON DATABASE "{name}" FROM PUBLIC')
    except BaseException:
        drop_database(admin, name)
        admin.close()
        raise
    admin.close()
    return name, tables, digest


def _load(server: PgServer, conn: Any, dbname: str, schema_sql: str, data: Any, dump: Path | None, where: str) -> None:
    driver = psycopg()
    if schema_sql.strip():
        try:
            conn.execute(schema_sql)
        except driver.Error as exc:
            raise DomainError(f"{where}: the PostgreSQL schema does not run: {_first_line(exc)}") from None
    if dump is not None:
        _restore_dump(server, dbname, dump, where)
    if isinstance(data, str):
        try:
            conn.execute(data)
        except driver.Error as exc:
            raise DomainError(f"{where}: the fixture's SQL does not run: {_first_line(exc)}") from None
    elif data:
        insert_rows(conn, data, where)


def insert_rows(conn: Any, rows: Mapping[str, Sequence[Mapping[str, Any]]], where: str) -> None:
    """Insert fixture rows given as ``{table: [ {column: value} ]}`` (errors name the table and row)."""
    driver = psycopg()
    from psycopg.types.json import Jsonb

    tables = read_tables(conn)
    with conn.transaction():  # all or nothing (a failed row leaves no half-loaded template: it is dropped)
        for table, items in rows.items():
            if table not in tables:
                raise DomainError(f"{where}: fixture table {table!r} is not in the schema; tables: {sorted(tables)}")
            t = tables[table]
            for i, row in enumerate(items):
                unknown = set(row) - set(t.columns)
                if unknown:
                    raise DomainError(f"{where}: {table}[{i}] has unknown columns {sorted(unknown)}; "
                                      f"columns: {list(t.columns)}")
                cols = ", ".join(quote_ident(c) for c in row)
                values = tuple(Jsonb(v) if isinstance(v, dict | list) else v for v in row.values())
                try:
                    conn.execute(f"INSERT INTO {t.target} ({cols}) VALUES ({', '.join(['%s'] * len(row))})", values)
                except driver.Error as exc:
                    raise DomainError(f"{where}: {table}[{i}]: {_first_line(exc)}") from None


def _restore_dump(server: PgServer, dbname: str, dump: Path, where: str) -> None:
    """Load a ``pg_dump`` file: custom/directory/tar format with ``pg_restore``, plain SQL with ``psql``."""
    custom = dump.is_dir() or dump.read_bytes()[:5] == b"PGDMP" or dump.suffix == ".tar"
    params = {**server.params, "dbname": dbname}
    env = {"PGPASSWORD": str(params.get("password") or ""), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    target = [f"--dbname={_dsn({k: v for k, v in params.items() if k != 'password'})}"]
    if custom:
        argv = [client_tool("pg_restore"), "--no-owner", "--no-privileges", "--exit-on-error", *target, str(dump)]
    else:
        argv = [client_tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", *target, "-f", str(dump)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise DomainError(f"{where}: {Path(argv[0]).name} could not load {dump}: {done.stderr.strip()[-800:]}")


def _dsn(params: Mapping[str, Any]) -> str:
    return " ".join(f"{k}='{str(v)}'" for k, v in params.items() if v not in (None, ""))


def _grant(conn: Any, group: str, schemas: set[str]) -> None:
    """The trials' group role may use the fixture's schemas, read and write their tables and sequences,
    and create objects of its own (a server's own tables are diffed too); never touch ``_passhat``."""
    role = quote_ident(group)
    for schema in sorted(schemas):
        s = quote_ident(schema)
        conn.execute(f"GRANT USAGE, CREATE ON SCHEMA {s} TO {role}")
        conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES ON ALL TABLES IN SCHEMA {s} TO {role}")
        conn.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {s} TO {role}")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
