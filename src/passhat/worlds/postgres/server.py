"""Which PostgreSQL server this process uses, and its session there: names, liveness, cleanup.

The server is ``--pg-url`` (:func:`configure`), else ``PASSHAT_PG_URL``, else a throwaway cluster this
process starts (``cluster.py``) when PostgreSQL is installed, else :class:`PostgresUnavailable`
saying what to install. The URL's role must be able to ``CREATE DATABASE``; with ``CREATEROLE`` (or a
superuser) each trial also gets a role of its own that cannot read the harness's change log.

Every database and role this process makes is named ``passhat_<session>_…``, where the session is 12
random hex digits held, for the life of the process, as a PostgreSQL advisory lock on a connection
of its own (to database ``postgres``, so every process's locks are in one place; PostgreSQL 13 or
later: databases are dropped ``WITH (FORCE)``). A run killed outright leaves its databases behind with
their lock released; the next process to use the server (``--resume``, another run, a test) finds them
by name, takes the lock, and drops them. A live run's lock is held, so its databases are never touched by another.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from passhat.worlds.postgres.cluster import ADMIN, Cluster, PostgresUnavailable, start_cluster

PREFIX = "passhat_"
NAME = re.compile(r"^passhat_([0-9a-f]{12})_")
ENV_URL = "PASSHAT_PG_URL"

_lock = threading.Lock()
_configured: str | None = None
_server: PgServer | None = None


def psycopg() -> Any:
    """The driver, imported on first use: ``pip install 'passhat[postgres]'`` when it is missing."""
    try:
        import psycopg as driver
    except ImportError:
        raise PostgresUnavailable("PostgreSQL fixtures need the psycopg driver: pip install 'passhat[postgres]'") from None
    return driver


def configure(url: str | None) -> None:
    """Use the server at ``url`` for this process (``--pg-url``); ``None``: back to the default choice."""
    global _configured
    with _lock:
        if _server is not None and _server.url_given != url:
            raise PostgresUnavailable("the PostgreSQL server is chosen once per process, before the first fixture is built")
        _configured = url
        if url:
            os.environ[ENV_URL] = url  # processes started for this run (Ray workers, --isolate) use it too


def current() -> PgServer:
    """This process's server, connected (and started, for a throwaway cluster) on first use."""
    global _server
    with _lock:
        if _server is None:
            url = _configured or os.environ.get(ENV_URL) or None
            _server = PgServer.start(url)
            atexit.register(_server.close)
        return _server


@dataclass
class PgServer:
    """A server, how its admin logs in, and this process's session on it."""

    params: dict[str, Any]
    """libpq connection parameters of the admin role (host or socket folder, port, user, password)."""
    url_given: str | None
    cluster: Cluster | None = None
    session: str = field(default_factory=lambda: secrets.token_hex(6))
    can_create_roles: bool = False
    version: int = 0
    _holder: Any = None
    _counter: int = 0
    _group_made: bool = False
    _names: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, url: str | None) -> PgServer:
        driver = psycopg()
        if url:
            params = dict(driver.conninfo.conninfo_to_dict(url))
            server = cls(params, url)
        else:
            cluster = start_cluster()
            params = {"host": str(cluster.socket_dir), "port": cluster.port, "user": ADMIN,
                      "password": cluster.password, "dbname": "postgres"}
            server = cls(params, None, cluster)
        try:
            server._open_session()
        except BaseException:
            server.close()
            raise
        return server

    def connect(self, dbname: str | None = None, **kw: Any) -> Any:
        """An admin connection (autocommit) to ``dbname`` (default: the URL's database, else ``postgres``)."""
        driver = psycopg()
        params = {**self.params, "dbname": dbname or self.params.get("dbname") or "postgres"}
        params.setdefault("connect_timeout", 10)
        try:
            return driver.connect(**params, autocommit=True, **kw)
        except driver.OperationalError as exc:
            where = self.url_given or f"the throwaway cluster in {self.cluster.root if self.cluster else '?'}"
            raise PostgresUnavailable(f"cannot connect to PostgreSQL ({where}): {exc}".strip()) from None

    def _open_session(self) -> None:
        # advisory locks are per database: every process takes its session's in the same one, `postgres`
        # (else the URL's), whatever database its URL names, or one could take another's for dead
        try:
            self._holder = self.connect("postgres")
        except PostgresUnavailable:
            self._holder = self.connect()
        row = self._holder.execute("SELECT rolsuper OR rolcreaterole, rolcreatedb OR rolsuper, "
                                   "current_setting('server_version_num')::int FROM pg_roles "
                                   "WHERE rolname = current_user").fetchone()
        self.can_create_roles, can_create_db, self.version = bool(row[0]), bool(row[1]), int(row[2])
        if not can_create_db:
            raise PostgresUnavailable(f"the PostgreSQL role {self.params.get('user')!r} may not CREATE DATABASE; "
                                      "passhat clones a database per trial: grant it CREATEDB")
        self._holder.execute("SELECT pg_advisory_lock(%s)", (_lock_key(self.session),))
        self.remove_dead()

    def world_role(self) -> str | None:
        """The session's role every trial's role belongs to, made once (``None`` if roles cannot be made:
        then trials connect as the URL's own role)."""
        if not self.can_create_roles:
            return None
        name = f"{PREFIX}{self.session}_world"
        with self._names:
            if not self._group_made:
                self._holder.execute(f'CREATE ROLE "{name}" NOLOGIN')
                self._group_made = True
        return name

    def new_name(self, what: str) -> str:
        """A fresh name in this session: ``passhat_<session>_<what><n>``."""
        with self._names:
            self._counter += 1
            return f"{PREFIX}{self.session}_{what}{self._counter}"

    def url(self, dbname: str, user: str, password: str) -> str:
        """A libpq URL for ``user`` on ``dbname`` over the same socket or host as the admin's."""
        host = str(self.params.get("host") or "")
        port = self.params.get("port")
        auth = f"{quote(user, safe='')}:{quote(password, safe='')}@"
        if host.startswith("/") or not host:  # a Unix socket folder goes in the query
            query = urlencode({k: v for k, v in (("host", host), ("port", port)) if v})
            return f"postgresql://{auth}/{quote(dbname, safe='')}" + (f"?{query}" if query else "")
        hostport = f"{host}:{port}" if port else host
        extra = {k: v for k, v in self.params.items() if k in ("sslmode", "sslrootcert")}
        return f"postgresql://{auth}{hostport}/{quote(dbname, safe='')}" + (f"?{urlencode(extra)}" if extra else "")

    def remove_dead(self) -> list[str]:
        """Drop the databases and roles of sessions whose process is gone (their advisory lock is free)."""
        rows = self._holder.execute("SELECT datname FROM pg_database WHERE datname LIKE 'passhat\\_%'").fetchall()
        roles = self._holder.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE 'passhat\\_%'").fetchall()
        sessions = {m.group(1) for (name,) in [*rows, *roles] if (m := NAME.match(name))} - {self.session}
        dropped = []
        for session in sorted(sessions):
            key = _lock_key(session)
            if not self._holder.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                continue  # alive: its process holds the lock
            try:
                dropped += self.drop_session(session)
            finally:
                self._holder.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return dropped

    def drop_session(self, session: str) -> list[str]:
        """Drop every database, then every role, named for ``session`` (templates are unmarked first)."""
        like = f"{PREFIX}{session}\\_%"
        names = [r[0] for r in self._holder.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (like,))]
        for name in names:
            drop_database(self._holder, name)
        roles = [r[0] for r in self._holder.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s "
                                                    "ORDER BY rolname LIKE '%%\\_world' ", (like,))]
        for role in roles:
            self._holder.execute(f'DROP ROLE IF EXISTS "{role}"')
        return names

    def close(self) -> None:
        """End the session: drop its databases and roles, stop a throwaway cluster (which removes them too)."""
        holder, self._holder = self._holder, None
        if self.cluster is not None:
            if holder is not None:
                holder.close()
            self.cluster.stop()
            return
        if holder is None:
            return
        try:
            self._holder = holder
            self.drop_session(self.session)
        except Exception:  # noqa: BLE001 - at exit: the next session's remove_dead drops what is left
            pass
        finally:
            self._holder = None
            holder.close()


def drop_database(conn: Any, name: str) -> None:
    """Drop ``name`` even if a server left sessions on it (``WITH (FORCE)``) or it is a template."""
    if _is_template(conn, name):
        conn.execute(f'ALTER DATABASE "{name}" IS_TEMPLATE false')
    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _is_template(conn: Any, name: str) -> bool:
    row = conn.execute("SELECT datistemplate FROM pg_database WHERE datname = %s", (name,)).fetchone()
    return bool(row and row[0])


def _lock_key(session: str) -> int:
    """The advisory-lock key of a session (48 bits of its id, with a tag in the high bits)."""
    return (0x7068 << 48) | int(session, 16)
