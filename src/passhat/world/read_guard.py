"""Read-only grading on a pooled in-memory copy without ``PRAGMA query_only`` (design 037).

Grading queries run on the trial's own connection, which its tools write on. ``PRAGMA query_only`` made
them read-only, but every flag pragma, on or off, expires every prepared statement of the connection
(SQLite's ``OP_Expire``), so the next trial re-prepared each of its ~40 statements: 10-100 µs each,
a trigger-heavy ``INSERT`` the most, about a third of a trial's CPU in all.

A :class:`ReadGuard` is the connection's authorizer instead, installed once when the copy is made
(installing one expires statements too; turning it on and off does not). While ``reading`` it refuses
everything but reading. An authorizer is asked only when a statement is prepared, and the connection's
statement cache would hand a statement prepared by a tool to a grading query of the same text, so
grading queries carry :data:`MARK` in front: their own text, prepared only while reading.

Rejected: ``query_only`` toggled less often (each toggle still expires everything); a savepoint around
each grading query, rolled back after it (a write would be undone, not refused, and DDL does not show in
``total_changes``); ``SQLITE_DBCONFIG`` settings (``setconfig`` needs Python 3.12).
"""

from __future__ import annotations

import sqlite3

MARK = "/*passhat:read*/ "
"""Put in front of every query run while reading: grading's statements are never ones a tool prepared."""

_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                           sqlite3.SQLITE_RECURSIVE})
"""What a reading query may do in any case."""

_NAME_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list",
    "collation_list", "function_list", "module_list", "pragma_list", "database_list", "compile_options",
})
"""Pragmas that only report, whatever their argument (a table's or an index's name)."""

_VALUE_PRAGMAS = frozenset({
    "user_version", "application_id", "schema_version", "data_version", "page_count", "page_size",
    "freelist_count", "encoding", "foreign_keys", "query_only",
})
"""Pragmas that report without an argument and set a value with one: only the former while reading."""

_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema"})
"""The schema table's two names."""


_ACTIONS = ("CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE", "CREATE_TEMP_TRIGGER",
            "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE", "DROP_INDEX", "DROP_TABLE",
            "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER", "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW",
            "INSERT", "PRAGMA", "READ", "SELECT", "TRANSACTION", "UPDATE", "ATTACH", "DETACH", "ALTER_TABLE",
            "REINDEX", "ANALYZE", "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT", "RECURSIVE")
_ACTION_NAMES = {getattr(sqlite3, f"SQLITE_{n}"): n for n in _ACTIONS}
"""Authorizer action codes by name (``DELETE``, ``PRAGMA``, ...), for the error."""


class ReadGuard:
    """A connection's authorizer: everything while not ``reading``, only reads while it is."""

    def __init__(self) -> None:
        self.reading = False
        """On while a grading query is prepared; the trial's tools and the harness's own statements need it off."""
        self.set_pragma = False
        """A statement setting a pragma was prepared outside a query since the copy was last pooled: a tool's
        ``PRAGMA query_only = ON`` outlives the trial's rollback, so the pool turns it off again (only then)."""
        self.refused: str | None = None
        """What was refused (for the error): the action and what it named; cleared by :meth:`refusal`."""

    def __call__(self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
        if not self.reading:
            if action == sqlite3.SQLITE_PRAGMA and arg2 is not None:
                self.set_pragma = True
            return sqlite3.SQLITE_OK
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        name = (arg1 or "").lower()
        if action == sqlite3.SQLITE_PRAGMA and (name in _NAME_PRAGMAS or (arg2 is None and name in _VALUE_PRAGMAS)):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_UPDATE and name in _SCHEMA_TABLES and db == "main":
            # SQLite declaring an eponymous virtual table (pragma_table_info, json_each) on first use; a query's
            # own UPDATE of the schema table fails anyway unless writable_schema is on, and setting it is refused
            return sqlite3.SQLITE_OK
        if self.refused is None:  # the first one (a CREATE TABLE is refused as an INSERT into sqlite_master)
            what = _ACTION_NAMES.get(action, str(action))
            self.refused = f"action {what} on {arg1!r}" if arg1 else f"action {what}"
        return sqlite3.SQLITE_DENY

    def refusal(self, sql: str) -> sqlite3.OperationalError:
        """The error a refused query raises: SQLite's own words for a write under ``query_only``, and what
        was refused (the authorizer's ``not authorized`` says neither)."""
        what, self.refused = self.refused, None
        return sqlite3.OperationalError(f"attempt to write a readonly database: a grading query may only read "
                                        f"({what}): {sql}")

