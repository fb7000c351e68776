"""A world kind: one typed interface for every sort of state a trial can have (docs/design/019).

An image is a fixture's state of one kind, built once per run; a copy is one trial's private state made
from it. The runner, graders, re-grading, reference runs and lint reach state only through this
interface and :class:`~passhat.world.world.World`, which composes a trial's parts, so a new kind (the
in-memory SQLite image, a workspace folder, a SQLite file, a PostgreSQL database) is a new module, not
an edit of them.

A kind's diff is one of two *facets*, the two a trial record has always held: ``rows`` (a row
:class:`~passhat.world.diff.Diff`) or ``files`` (a ``FileDiff``). A fixture has at most one part of each.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from passhat.world.image import TableInfo

Facet = Literal["rows", "files"]
"""What a kind's diff is: rows (inserted, updated, deleted by primary key) or files (added, removed, modified)."""
Params = tuple[Any, ...] | dict[str, Any]
D = TypeVar("D")
D_co = TypeVar("D_co", covariant=True)

PLACEHOLDERS = ("workspace", "sqlite_path", "database_url")
"""The names :meth:`WorldCopy.reach` may return: the trial's workspace folder, its SQLite database file,
its PostgreSQL database URL. A server started per trial gets them substituted (``{database_url}``)."""


class StateReader(Protocol):
    """Read-only SQL on a state, for assertions and for checking cases against a fixture."""

    @property
    def tables(self) -> Mapping[str, TableInfo]:
        """Columns and primary key of every table of the state."""
        ...

    def query(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """All rows of a read-only query; ``?`` marks parameters whatever the database. A write is refused;
        a query past the kind's budget raises :class:`~passhat.world.query.QueryBudgetExceeded`."""
        ...

    def compile_error(self, sql: str) -> str | None:
        """``None`` when ``sql`` compiles against the state, else the database's own message."""
        ...


class CallScope(Protocol):
    """One tool call's writes: kept when the call completes, undone when it fails (where the kind can)."""

    def keep(self) -> None: ...

    def undo(self) -> None: ...


class WorldCopy(Protocol[D_co]):
    """One trial's private state of one kind."""

    kind: str
    facet: Facet
    blocking: bool
    """As its image's :attr:`WorldImage.blocking`: ``diff`` and ``discard`` go off the event loop."""
    handle: object
    """What a native ``@tool`` gets in process: a ``sqlite3.Connection``, a ``psycopg.Connection``
    (``ctx.pg``), a ``WorkspaceCopy`` (``ctx.world.workspace``). A rows kind also has ``db``: its
    connection with sqlite3's interface (``ctx.db``), the handle itself for SQLite."""

    def reach(self) -> dict[str, str]:
        """How another process reaches this state: placeholder name (:data:`PLACEHOLDERS`) → value."""
        ...

    def call_scope(self) -> CallScope:
        """Begin one tool call; a kind that cannot undo a call returns a scope whose methods do nothing."""
        ...

    def diff(self) -> D_co:
        """The copy against its image (rows: by primary key; files: by path)."""
        ...

    def reader(self) -> StateReader | None:
        """Read-only queries on the copy's current state (``None`` for kinds without SQL)."""
        ...

    def discard(self) -> None:
        """The copy is gone (a connection pooled, a database dropped, a folder deleted). Idempotent."""
        ...


class WorldImage(Protocol[D]):
    """A fixture's state of one kind, built once per run."""

    kind: str
    """``sqlite``, ``workspace``, ``sqlite_file``, ``postgres``: how the fixture is stored."""
    facet: Facet
    blocking: bool
    """Whether :meth:`open`, the copy's ``diff`` and ``discard`` block (file copies, sockets): async callers
    run them in a thread. The in-memory SQLite kind does not, so its trials take no thread hop."""

    @property
    def start(self) -> datetime | None:
        """Where the trial clock starts (a rows fixture's ``now``); ``None``: the domain's start."""
        ...

    def content_hash(self) -> str:
        """Hash of the built state, whatever built it (docs/design/014)."""
        ...

    def open(self) -> WorldCopy[D]:
        """A private copy in the fixture's state."""
        ...

    def rebuild(self, diff: D) -> WorldCopy[D]:
        """A private copy with a recorded diff applied: a trial's final state again, for re-grading. Raises
        ``ReplayError`` (rows) or ``WorkspaceError`` (files) when the diff does not fit the fixture."""
        ...

    def reading(self) -> AbstractContextManager[StateReader | None]:
        """The fixture's own state, read-only, for checking cases before any trial."""
        ...

    def close(self) -> None:
        """Release what the image holds (pooled copies, a master folder, a template database)."""
        ...


@runtime_checkable
class WorldSource(Protocol):
    """A fixture declared in ``Domain(fixtures={name: source})`` of a kind other than the in-memory default:
    ``Postgres(...)``, ``SqliteFile(...)``. The domain builds it once, on first use."""

    kind: str
    facet: Facet

    def build(self, fixture: str, schema: str, start: datetime) -> WorldImage[Any]:
        """The image of fixture ``fixture``; ``schema`` and ``start`` are the domain's (a source may have its own)."""
        ...

    def describe(self) -> str:
        """One line for messages: the kind and where its data comes from."""
        ...


@runtime_checkable
class ChangeTracking(Protocol):
    """A rows copy that can tell which rows each tool call wrote (``ToolCall.changed_rows``), so failure
    attribution names the call that wrote a wrong row. Optional: a kind without it (the SQLite file, whose
    diff compares pages) leaves ``changed_rows`` unknown and attribution says why it names no step."""

    def change_mark(self) -> int:
        """A position in the copy's change log."""
        ...

    def changed_since(self, mark: int, limit: int = 200) -> list[tuple[str, list[Any]]]:
        """(table, primary key) of the rows written after ``mark``, first-written order, at most ``limit``."""
        ...


class NoScope:
    """The call scope of a kind that cannot undo a call (a folder, a server's own commits)."""

    def keep(self) -> None:
        pass

    def undo(self) -> None:
        pass


NO_SCOPE = NoScope()
