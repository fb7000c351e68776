"""Trial databases made ahead of time, so a trial waits for none of the cloning it needs.

A *slot* is everything one trial needs, ready: a database cloned from the template (``CREATE DATABASE
… TEMPLATE … STRATEGY …``), a login role of its own that may connect to that database only, the
trial's URL, a harness connection (read-only session: the diff and the assertions) and the native
tools' connection (as the trial's role). Making one costs tens of milliseconds for a small fixture and
hundreds for a large one (the copy), plus two logins; two filler threads keep ``ahead`` slots ready and
make more while trials wait. A trial takes a ready slot (microseconds when one is ready) and gives it
back to be dropped by a third thread, off its critical path.
"""

from __future__ import annotations

import atexit
import contextlib
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from passhat.worlds.postgres.reader import read_only
from passhat.worlds.postgres.server import PgServer, drop_database, psycopg

AHEAD = 2
"""Slots kept ready beyond those trials are waiting for."""
FILLERS = 2
TAKE_SECONDS = 300.0
RETRY_SECONDS = 0.5
"""How long a filler waits after failing to make a slot before it tries again."""


@dataclass
class Slot:
    """One trial's database, role and connections."""

    dbname: str
    role: str | None
    url: str
    harness: Any
    native: Any
    made_ms: float
    """How long making it took (the clone, the role, the logins): off the trial's critical path."""


class Slots:
    """Ready slots of one template, made by filler threads, dropped by a dropper thread."""

    def __init__(self, server: PgServer, template: str, group: str | None, strategy: str | None,
                 ahead: int = AHEAD) -> None:
        self.server, self.template, self.group, self.strategy = server, template, group, strategy
        self.ahead = ahead
        self._ready: deque[Slot] = deque()
        self._waiting = 0
        self._making = 0
        self._failure: BaseException | None = None
        self._cond = threading.Condition()
        self._closed = False
        self._drops: deque[Slot | str] = deque()
        self._threads: list[threading.Thread] = []
        self.made = 0
        atexit.register(self.close)

    def _start(self) -> None:
        if self._threads:
            return
        for i in range(FILLERS):
            t = threading.Thread(target=self._fill, name=f"passhat-pg-fill-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._drop, name="passhat-pg-drop", daemon=True)
        t.start()
        self._threads.append(t)

    def take(self) -> Slot:
        """A ready slot; waits while none is (the fillers are told a trial waits)."""
        with self._cond:
            self._start()
            self._waiting += 1
            self._cond.notify_all()
            try:
                deadline = time.monotonic() + TAKE_SECONDS
                while not self._ready:
                    if self._failure is not None:
                        failure, self._failure = self._failure, None
                        raise failure
                    if self._closed:
                        raise RuntimeError("the PostgreSQL world was closed")
                    if not self._cond.wait(timeout=max(0.0, deadline - time.monotonic())):
                        raise TimeoutError(f"no trial database from template {self.template} within {TAKE_SECONDS:g}s")
                slot = self._ready.popleft()
            finally:
                self._waiting -= 1
            self._cond.notify_all()  # a filler may make the next one now
            return slot

    def give_back(self, slot: Slot) -> None:
        """Close the slot's connections and have its database and role dropped (in the dropper thread)."""
        for conn in (slot.native, slot.harness):
            with contextlib.suppress(Exception):
                conn.close()
        with self._cond:
            self._drops.append(slot)
            self._cond.notify_all()

    def _wanted(self) -> bool:
        return not self._closed and len(self._ready) + self._making < self.ahead + self._waiting

    def _fill(self) -> None:
        admin = None
        while True:
            with self._cond:
                while not self._wanted():
                    if self._closed:
                        if admin is not None:
                            admin.close()
                        return
                    self._cond.wait()
                self._making += 1
            try:
                admin = admin or self.server.connect()
                slot = self.make(admin)
            except Exception as exc:  # a waiting take() raises it (the trial is infrastructure: retried), then on
                with self._cond:
                    self._making -= 1
                    self._failure = exc
                    self._cond.notify_all()
                if admin is not None:
                    with contextlib.suppress(Exception):
                        admin.close()
                admin = None
                time.sleep(RETRY_SECONDS)  # the server may be back (too many connections, a restart)
                continue
            with self._cond:
                self._making -= 1
                if self._closed:
                    self._drops.append(slot)
                else:
                    self._ready.append(slot)
                    self.made += 1
                self._cond.notify_all()

    def make(self, admin: Any) -> Slot:
        """Clone the template into a new database with a role of its own; log in as both."""
        t0 = time.perf_counter()
        server = self.server
        dbname = server.new_name("t")
        role, password = None, str(server.params.get("password") or "")
        strategy = f" STRATEGY {self.strategy}" if self.strategy and server.version >= 150000 else ""
        try:
            admin.execute(f'CREATE DATABASE "{dbname}" TEMPLATE "{self.template}"{strategy}')
        except Exception as exc:
            room = _out_of_room(server, exc)
            if room is None:
                raise
            raise room from exc
        try:
            admin.execute(f'REVOKE ALL ON DATABASE "{dbname}" FROM PUBLIC')
            if self.group is not None:
                role, password = f"{dbname}_role", secrets.token_hex(16)
                admin.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}' IN ROLE \"{self.group}\"")
                admin.execute(f"ALTER ROLE \"{role}\" SET TimeZone = 'UTC'")
                admin.execute(f'GRANT CONNECT, TEMPORARY ON DATABASE "{dbname}" TO "{role}"')
            user = role or str(server.params.get("user") or "")
            url = server.url(dbname, user, password)
            harness = server.connect(dbname)
            read_only(harness)
            harness.execute("SELECT _passhat.warm()")  # the trial's diff finds this session's caches filled
            driver = psycopg()
            from psycopg.rows import dict_row

            native = driver.connect(url, autocommit=True, row_factory=dict_row, connect_timeout=10,
                                    options="-c TimeZone=UTC")
        except BaseException:
            self._drop_now(admin, dbname, role)
            raise
        return Slot(dbname, role, url, harness, native, (time.perf_counter() - t0) * 1000)

    def _drop(self) -> None:
        admin = None
        while True:
            with self._cond:
                while not self._drops:
                    if self._closed and not any(t.is_alive() for t in self._threads[:FILLERS]):
                        if admin is not None:
                            admin.close()
                        return
                    self._cond.wait(timeout=0.5)
                item = self._drops.popleft()
            try:
                admin = admin or self.server.connect()
                if isinstance(item, Slot):
                    self._drop_now(admin, item.dbname, item.role)
                else:
                    drop_database(admin, item)
            except Exception:  # noqa: BLE001 - left for the session's own clean-up at exit (or the next run's)
                admin = None

    @staticmethod
    def _drop_now(admin: Any, dbname: str, role: str | None) -> None:
        drop_database(admin, dbname)
        if role is not None:
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')

    def close_with_template(self) -> None:
        """:meth:`close`, then drop the template too (the image is done with)."""
        self.close()
        with contextlib.suppress(Exception), self.server.connect() as admin:
            drop_database(admin, self.template)

    def close(self) -> None:
        """Stop making slots; drop the ready ones (waits for the dropper, a few seconds at most)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._drops.extend(self._ready)
            self._ready.clear()
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout=30)


def _out_of_room(server: PgServer, exc: Exception) -> Exception | None:
    """A clone that did not fit a throwaway cluster in RAM, said with what to do (``None``: another error)."""
    from passhat.worlds.postgres.cluster import DIR_ENV, PostgresUnavailable
    from passhat.worlds.ram import in_ram

    cluster = server.cluster
    if cluster is None or "No space left on device" not in str(exc) or not in_ram(cluster.root):
        return None
    return PostgresUnavailable(f"a trial's database did not fit the throwaway cluster in {cluster.root}, which is in "
                               f"RAM: set {DIR_ENV} to a folder on disk (e.g. {DIR_ENV}=/var/tmp) for fixtures this "
                               f"large, or give a server with --pg-url ({exc})")
