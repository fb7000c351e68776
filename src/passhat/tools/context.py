"""What a tool sees of the trial: the world and the identity it acts for."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NoReturn

from passhat.world import World


class ToolFailure(Exception):
    """A business error a tool reports to the agent (e.g. "invoice not found").

    It comes back to the agent as a tool error and is recorded; it never crashes the run.
    """


class PermissionDenied(Exception):
    """The identity the agent acts for may not do this. Enforced at the tool layer, not by prompt."""


@dataclass
class ToolContext:
    """Handed to every tool call as its first argument."""

    world: World
    identity: str | None = None
    """Who the agent acts for (e.g. an employee id). Tools scope data access to it."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Case-level facts for tools that need them (rarely; prefer fixture data)."""

    @property
    def db(self) -> sqlite3.Connection:
        """The trial's SQLite connection (``sqlite`` and ``sqlite_file`` fixtures; ``ctx.pg`` for PostgreSQL)."""
        return self.world.db

    @property
    def pg(self) -> Any:
        """The trial's ``psycopg.Connection`` (``postgres`` fixtures): rows as dicts, ``%s`` parameters."""
        return self.world.pg

    def now(self) -> str:
        """Current simulated time, ISO 8601."""
        return self.world.clock.iso()

    def new_id(self, prefix: str, digits: int = 5) -> str:
        """A deterministic, unique ID such as ``R-55821``."""
        return self.world.ids.next(prefix, digits)

    def deny(self, reason: str) -> NoReturn:
        """Refuse the call for lack of permission; whatever the call wrote so far is rolled back."""
        raise PermissionDenied(reason)

    def fail(self, reason: str) -> NoReturn:
        """Refuse the call for a business reason; whatever the call wrote so far is rolled back."""
        raise ToolFailure(reason)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """Group several writes so they happen together or not at all, inside a call that goes on; yields the
        database connection (``ctx.db`` or ``ctx.pg``).

        Every call is already atomic (the boundary rolls back a call that raises, including through
        ``fail()`` and ``deny()``); this is for a tool that catches an error itself and carries on. A nested
        scope of the world's database (a savepoint), because the call runs inside one of the harness's own;
        tools must never ``BEGIN``/``COMMIT`` themselves.
        """
        with self.world.transaction() as handle:
            yield handle
