"""The ``sqlite_file`` world kind: a SQLite database file, for servers that open a file themselves.

The fixture is built once into a file (from a schema plus YAML rows or a loader function, or copied
from a database file you give) in a private folder. Each trial gets its own copy of it, in a folder of
its own (mode 0700): ``{sqlite_path}``. Native tools get ``ctx.db``, a connection to that copy; a call is
a transaction on it (committed when the call completes, so a server on the same file sees it).

No trigger or log table is put in the file: a server that lists tables or triggers
(``mcp-server-sqlite``'s ``list_tables``) would see them, and a server's own ``VACUUM`` or schema
rewrite would take them away. Instead the diff compares the copy's pages with the image's
(``sqlite_pages.py``) to find the tables that changed, then compares just those tables with the image,
by primary key (``rowid`` without one), inside SQLite (the image attached read-only). It costs a pass over
the file's bytes (memory speed) plus the size of the changed tables, not of the whole database.
"""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from passhat.errors import DomainError
from passhat.world.copies import copy_file
from passhat.world.diff import Diff
from passhat.world.fingerprint import state_hash
from passhat.world.fixture_file import read_fixture
from passhat.world.image import TableInfo, _quote, insert_rows, read_tables
from passhat.world.kind import Facet
from passhat.world.sqlite_kind import Savepoint, SqliteReader
from passhat.worlds.ready_copies import ReadyCopies
from passhat.worlds.sqlite_pages import EVERY_ROW, SCHEMA_BTREE, Interval, Owner, page_owners, rowid_intervals, touched_rows
from passhat.worlds.sqlite_rows import diff_tables

BUSY_MS = 5000
"""How long the native tools' connection waits for a lock a server holds on the same file."""


class SqliteFileCopy(Savepoint):
    """One trial's private copy of the fixture file."""

    kind = "sqlite_file"
    facet: Facet = "rows"
    blocking = True

    def __init__(self, image: SqliteFileImage, folder: Path) -> None:
        self.image = image
        self.folder = folder
        self.path = folder / image.file_name
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_MS / 1000)
        self.db.row_factory = sqlite3.Row
        self.handle: object = self.db
        self.tables = image.tables
        self._reader = SqliteReader(self.db, image.tables)
        self._open = True

    def reach(self) -> dict[str, str]:
        return {"sqlite_path": str(self.path)}

    def current(self, table: TableInfo, key: tuple[Any, ...]) -> dict[str, Any] | None:
        where = " AND ".join(f"{_quote(c)} IS ?" for c in table.key)
        cols = ", ".join(_quote(c) for c in table.columns)
        row = self.db.execute(f"SELECT {cols} FROM {_quote(table.name)} WHERE {where}", key).fetchone()
        return dict(zip(table.columns, row, strict=True)) if row is not None else None

    def diff(self) -> Diff:
        """The copy against the image, by primary key, for the tables whose pages changed."""
        self._settle()
        image = self.image
        touched = touched_rows(image.path, self.path, image.page_size, image.owners, image.intervals)
        schema_changed = touched is None or SCHEMA_BTREE in touched
        if schema_changed:  # tables may be gone or new: compare every row of every table
            touched = {name: [EVERY_ROW] for name in image.tables}
        assert touched is not None
        scope = {n: (image.tables[n], ranges) for n, ranges in touched.items() if n in image.tables}
        return diff_tables(self.db, image.path, scope, schema_changed=schema_changed)

    def _settle(self) -> None:
        """Fold a write-ahead log into the file, so its pages say what the database holds."""
        if (self.folder / f"{self.image.file_name}-wal").exists():
            busy, _, _ = self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                raise sqlite3.OperationalError(f"{self.path}: a server still holds the database open in WAL mode")

    def reader(self) -> SqliteReader:
        return self._reader

    def discard(self) -> None:
        if self._open:
            self._open = False
            self.db.close()
            shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class SqliteFileImage:
    """The fixture file, built once: its tables, page map and state hash."""

    path: Path
    tables: dict[str, TableInfo]
    page_size: int
    owners: dict[int, Owner]
    intervals: dict[int, tuple[str, Interval]]
    state_hash: str
    start: datetime
    kind = "sqlite_file"
    facet: Facet = "rows"
    blocking = True

    @property
    def file_name(self) -> str:
        return self.path.name

    def content_hash(self) -> str:
        return self.state_hash

    def __post_init__(self) -> None:
        self._ready = ReadyCopies(self._copy)
        atexit.register(self.close)  # the image's folder and the copies made ahead go with the process

    def _copy(self) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="passhat-sqlite-"))
        try:
            copy_file(self.path, folder / self.file_name)
            (folder / self.file_name).chmod(0o644)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return folder

    def open(self) -> SqliteFileCopy:
        folder = self._ready.take()
        try:
            return SqliteFileCopy(self, folder)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def rebuild(self, diff: Diff) -> SqliteFileCopy:
        from passhat.world.replay import apply_diff

        copy = self.open()
        try:
            with _transaction(copy.db):
                apply_diff(copy, diff)  # type: ignore[arg-type]
        except BaseException:
            copy.discard()
            raise
        return copy

    @contextmanager
    def reading(self) -> Iterator[SqliteReader]:
        conn = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        try:
            yield SqliteReader(conn, self.tables)
        finally:
            conn.close()

    def close(self) -> None:
        self._ready.close()
        shutil.rmtree(self.path.parent, ignore_errors=True)


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@dataclass(frozen=True)
class SqliteFile:
    """A fixture kept as a SQLite database file: ``SqliteFile(data=HERE / "default.yaml")`` (the domain's
    schema, or ``schema=``), ``SqliteFile(load=function)``, or ``SqliteFile(file=HERE / "app.db")``."""

    schema: str | Path | None = None
    """The schema (SQL text or a file); ``None``: the domain's ``schema=`` (unused with ``file``)."""
    data: Path | None = None
    """Rows: a YAML fixture (``now``, ``tables``), as for an in-memory fixture."""
    load: Callable[[sqlite3.Connection], None] | None = None
    """Rows from a function given a connection to the new file (instead of ``data``)."""
    file: Path | None = None
    """A database file to start from as it is (copied; the original is never written)."""
    name: str = "world.sqlite"
    """The file's name in every trial's folder (some servers care about the extension)."""
    kind = "sqlite_file"
    facet: Facet = "rows"

    def __post_init__(self) -> None:
        given = [x for x in (self.data, self.load, self.file) if x is not None]
        if len(given) > 1:
            raise DomainError("SqliteFile: give one of data=, load= or file=")
        for label, path in (("data", self.data), ("file", self.file)):
            if path is not None and not Path(path).is_file():
                raise DomainError(f"SqliteFile({label}={str(path)!r}): no such file")
        if "/" in self.name or not self.name:
            raise DomainError(f"SqliteFile(name={self.name!r}): a file name, without folders")

    def describe(self) -> str:
        where = self.file or self.data
        return f"a SQLite file fixture ({where})" if where is not None else "a SQLite file fixture"

    def build(self, fixture: str, schema: str, start: datetime) -> SqliteFileImage:
        folder = Path(tempfile.mkdtemp(prefix="passhat-sqlite-image-"))
        path = folder / self.name
        try:
            if self.file is not None:
                copy_file(Path(self.file), path)
                conn = sqlite3.connect(path)
                conn.execute("PRAGMA journal_mode = DELETE")  # self-contained: no -wal beside it
            else:
                conn = sqlite3.connect(path)
                text = self.schema.read_text("utf-8") if isinstance(self.schema, Path) else (self.schema or schema)
                try:
                    conn.executescript(text)
                except sqlite3.Error as exc:
                    raise DomainError(f"fixture {fixture!r}: schema failed: {exc}") from exc
                if self.data is not None:
                    rows, start = read_fixture(Path(self.data), start)
                    insert_rows(conn, rows, str(self.data))
                elif self.load is not None:
                    self.load(conn)
            conn.commit()
            conn.execute("VACUUM")  # a compact file with no free pages: trials start from the same bytes
            tables = {n: t for n, t in read_tables(conn).items()}
            digest = state_hash(conn, start, skip_table="", skip_trigger_prefix="\0")
            conn.close()
            page_size, owners, roots = page_owners(path)
            intervals = rowid_intervals(path, page_size, roots)
            path.chmod(0o444)  # the image is never written; trials write their copies
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return SqliteFileImage(path, tables, page_size, owners, intervals, digest, start)


__all__ = ["SqliteFile", "SqliteFileCopy", "SqliteFileImage", "diff_tables"]
