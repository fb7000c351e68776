"""One trial's world: its parts (private copies of each kind of fixture state), clock, IDs and RNG.

The parts are :class:`~passhat.world.kind.WorldCopy` objects of any kind (docs/design/019): at most one
``rows`` part (an in-memory SQLite copy, a SQLite file, a PostgreSQL database) and one ``files`` part
(a workspace folder). Everything above this module — the tool boundary, the runner, the graders,
re-grading — asks the world, never a kind, so a new kind needs no edit there.
"""

from __future__ import annotations

import asyncio
import functools
import random
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from passhat.seeding import derive_seed
from passhat.world.clock import Clock, IdGenerator
from passhat.world.diff import Diff
from passhat.world.image import FixtureImage, TableInfo
from passhat.world.kind import NO_SCOPE, CallScope, ChangeTracking, Params, StateReader, WorldCopy, WorldImage
from passhat.world.sqlite_kind import SqliteCopy, SqliteImage

if TYPE_CHECKING:
    from passhat.workspace.tree import FileDiff, WorkspaceCopy


class WorldError(Exception):
    """A tool asked the world for a kind of state its fixture does not have (``ctx.pg`` in a SQLite world)."""


class _Scopes:
    """The call scope of a world with several undoable parts: each part's, kept or undone together."""

    __slots__ = ("scopes",)

    def __init__(self, scopes: list[CallScope]) -> None:
        self.scopes = scopes

    def keep(self) -> None:
        for s in reversed(self.scopes):
            s.keep()

    def undo(self) -> None:
        for s in reversed(self.scopes):
            s.undo()


@dataclass
class FinalState:
    """What grading sees of a world after the agent: the two diffs, SQL on the final state, the final tree."""

    diff: Diff
    files: FileDiff | None = None
    reader: StateReader | None = None
    workspace: Path | None = None
    tables: Mapping[str, TableInfo] = field(default_factory=dict)
    query: Callable[..., list[tuple[Any, ...]]] = field(init=False)
    """Read-only SQL on the final state (``?`` markers, whatever the database): the reader's own method."""

    def __post_init__(self) -> None:
        self.query = self.reader.query if self.reader is not None else _no_database


_TRACKING: dict[type, bool] = {}
"""Per kind of rows copy, whether it is :class:`ChangeTracking`: ``isinstance`` on a runtime protocol looks up
each of its methods (~10 µs, once per trial otherwise)."""


def _tracks_changes(part: WorldCopy[Any] | None) -> bool:
    kind = type(part)
    known = _TRACKING.get(kind)
    if known is None:
        known = _TRACKING[kind] = isinstance(part, ChangeTracking)
    return known


def _no_database(sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
    raise WorldError("this fixture has no database to query")


class _NoDatabase:
    """``World.db`` of a world without a database part: any use says so."""

    def __getattr__(self, name: str) -> Any:
        raise WorldError("this trial's fixture has no database (a workspace only)")


class World:
    """The live state of one trial. Tools reach it via ``ToolContext``; :meth:`close` ends it."""

    def __init__(self, parts: Iterable[WorldCopy[Any]], seed: int, start: datetime,
                 command_env: Mapping[str, str] | None = None) -> None:
        self.parts: list[WorldCopy[Any]] = list(parts)
        self.rows: WorldCopy[Diff] | None = None
        """The database part (any rows kind), if the fixture has one."""
        self.files: WorldCopy[FileDiff] | None = None
        """The folder part (a workspace), if the fixture has one."""
        for part in self.parts:
            if part.facet not in ("rows", "files"):
                raise ValueError(f"world part {part.kind}: unknown facet {part.facet!r} (rows or files)")
            held = getattr(self, part.facet)
            if held is not None:
                raise ValueError(f"a world has at most one {part.facet} part; got {held.kind} and {part.kind}")
            setattr(self, part.facet, part)
        self.db: sqlite3.Connection = getattr(self.rows, "db", None) or _NoDatabase()  # type: ignore[assignment]
        """The trial's database with sqlite3's interface: the ``sqlite3.Connection`` of a SQLite world; on
        PostgreSQL, the same calls (``?`` markers, rows like ``sqlite3.Row``) over ``ctx.pg``. Writable after
        :meth:`query` too: a query's read-only guard is on only while it runs (``world/read_guard.py``)."""
        if len(self.parts) == 1:  # the usual world: its one part's scope, without a call in between
            self.call_scope = self.parts[0].call_scope  # type: ignore[method-assign]
        self.command_env: dict[str, str] = dict(command_env or {})
        self.workspace_bounds: Any = None
        """The domain's :class:`~passhat.workspace.bounds.WorkspaceBounds` for commands in this world's copy."""
        """Environment variables the domain adds to every command run in the workspace."""
        self.seed = seed
        self.clock = Clock(start)
        self.ids = IdGenerator(derive_seed("ids", seed))
        self._tracker: ChangeTracking | None = self.rows if _tracks_changes(self.rows) else None

    @functools.cached_property
    def rng(self) -> random.Random:
        """The trial's random numbers (seeded from its seed): made when a tool first asks, as most never do
        (seeding one costs ~10 µs of every trial's ~1.5 ms)."""
        return random.Random(derive_seed("rng", self.seed))

    @classmethod
    def restore(cls, image: FixtureImage | WorldImage[Any], seed: int) -> World:
        """A fresh world with one part, in an image's initial state. ``Domain.restore`` is the usual way: it
        opens every part of a fixture."""
        kind: WorldImage[Any] = SqliteImage(image) if isinstance(image, FixtureImage) else image
        return cls([kind.open()], seed, kind.start or datetime(2026, 1, 1, 9))

    # --- how tools reach the state ---------------------------------------------------------------------

    def reach(self) -> dict[str, str]:
        """How a process of its own (an MCP server) reaches this trial's state: placeholder → value
        (``workspace``, ``sqlite_path``, ``database_url``; only those the fixture has)."""
        out: dict[str, str] = {}
        for part in self.parts:
            out.update(part.reach())
        return out

    @property
    def pg(self) -> Any:
        """The trial's ``psycopg.Connection`` (``postgres`` fixtures): autocommit off, rows as dicts."""
        if self.rows is None or self.rows.kind != "postgres":
            raise WorldError(f"this trial's database is {self._kind_of(self.rows)}, not PostgreSQL: use ctx.db")
        return self.rows.handle

    @property
    def workspace(self) -> WorkspaceCopy | None:
        """The trial's private copy of its workspace fixture (``None`` without one)."""
        return self.files.handle if self.files is not None else None  # type: ignore[return-value]

    @property
    def tables(self) -> dict[str, TableInfo]:
        reader = self.rows.reader() if self.rows is not None else None
        return dict(reader.tables) if reader is not None else {}

    @property
    def image(self) -> FixtureImage:
        """The in-memory image this world was restored from (``sqlite`` fixtures)."""
        return self.sqlite.image

    @property
    def sqlite(self) -> SqliteCopy:
        """The ``sqlite`` part itself, for the machinery that reads its change log (cassettes, replay)."""
        if not isinstance(self.rows, SqliteCopy):
            raise WorldError(f"this trial's database is {self._kind_of(self.rows)}, not the in-memory SQLite image")
        return self.rows

    @staticmethod
    def _kind_of(part: WorldCopy[Any] | None) -> str:
        return "none" if part is None else f"a {part.kind} world"

    # --- one tool call ---------------------------------------------------------------------------------

    def call_scope(self) -> CallScope:
        """Begin one tool call: its writes are kept (``keep()``) or undone (``undo()``) as one, where the
        kinds can undo them; a call a server of its own served has committed there, whatever this says."""
        scopes = [s for s in (p.call_scope() for p in self.parts) if s is not NO_SCOPE]
        return scopes[0] if len(scopes) == 1 else _Scopes(scopes) if scopes else NO_SCOPE

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A nested all-or-nothing group inside a call, on the database part; yields its handle."""
        scope = self.rows.call_scope() if self.rows is not None else NO_SCOPE
        try:
            yield getattr(self.rows, "db", None)
        except BaseException:
            scope.undo()
            raise
        scope.keep()

    # --- after the agent -------------------------------------------------------------------------------

    def diff(self) -> Diff:
        """Rows inserted, updated or deleted since the fixture (empty without a database part)."""
        return self.rows.diff() if self.rows is not None else Diff()

    def query(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """Read-only SQL on the current state (graders use this; writes are refused). A runaway query fails
        with :class:`~passhat.world.query.QueryBudgetExceeded` instead of hanging the run."""
        return self._state(Diff(), None).query(sql, params)

    def change_mark(self) -> int | None:
        """A position in the database part's change log, for :meth:`changed_since`; ``None`` when the fixture
        has no database part or its kind cannot say which rows a call wrote (then attribution says so)."""
        return self._tracker.change_mark() if self._tracker is not None else None

    def changed_since(self, mark: int, limit: int = 200) -> list[tuple[str, list[Any]]]:
        """(table, primary key) of the rows written since ``mark``, in the order first written (at most
        ``limit``): which tool call wrote which row, for failure attribution (``ToolCall.changed_rows``)."""
        return self._tracker.changed_since(mark, limit) if self._tracker is not None else []

    def _state(self, diff: Diff, files: FileDiff | None) -> FinalState:
        reader = self.rows.reader() if self.rows is not None else None
        root = self.reach().get("workspace")
        return FinalState(diff=diff, files=files, reader=reader, workspace=Path(root) if root else None,
                          tables=reader.tables if reader is not None else {})

    async def final_state(self) -> FinalState:
        """Both diffs, taken once the agent is done (blocking kinds in a thread), and the final state to read."""
        diff = await self._run(self.rows, "diff") if self.rows is not None else Diff()
        files = await self._run(self.files, "diff") if self.files is not None else None
        return self._state(diff, files)

    def final_state_now(self, diff: Diff | None = None, files: FileDiff | None = None) -> FinalState:
        """The final state without taking diffs (re-grading passes the recorded ones), synchronously."""
        return self._state(diff if diff is not None else Diff(), files)

    async def _run(self, part: WorldCopy[Any], method: str) -> Any:
        call = getattr(part, method)
        return await asyncio.to_thread(call) if part.blocking else call()

    def close(self) -> None:
        """End the trial: every part is discarded (database changes undone or dropped, folders deleted)."""
        errors = []
        for part in self.parts:
            try:
                part.discard()
            except Exception as exc:  # the other parts are still discarded
                errors.append(exc)
        if errors:
            raise errors[0]

    async def aclose(self) -> None:
        """:meth:`close` from async code: blocking parts are discarded in a thread."""
        errors = []
        for part in self.parts:
            try:
                await self._run(part, "discard")
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
