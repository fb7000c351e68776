"""Deterministic time and identifiers for a trial.

Real wall-clock time and global counters make final states differ between trials for reasons that
have nothing to do with the agent; τ-bench users had to hard-code IDs and timestamps. Here both
are derived from the trial seed, so a trial replays exactly and assertions filter on business keys.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta


class Clock:
    """A clock that only moves when the harness moves it (one tick per tool call)."""

    def __init__(self, start: datetime, tick_seconds: float = 1.0) -> None:
        self._now = start
        self._tick = timedelta(seconds=tick_seconds)

    def now(self) -> datetime:
        """The current simulated time."""
        return self._now

    def iso(self) -> str:
        """The current simulated time as ISO 8601 text, for storing in the database."""
        return self._now.isoformat()

    def tick(self) -> None:
        """Advance by one tick; the tool boundary calls this before every tool call."""
        self._now += self._tick

    def advance(self, seconds: float) -> None:
        """Advance by an explicit amount, e.g. for a latency fault."""
        self._now += timedelta(seconds=seconds)


class IdGenerator:
    """Readable IDs like ``R-55821``: a seeded starting number per prefix, then consecutive."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._next: dict[str, int] = {}

    def next(self, prefix: str, digits: int = 5) -> str:
        """The next ID for ``prefix``; unique within the trial."""
        if prefix not in self._next:
            low = 10 ** (digits - 1)
            self._next[prefix] = self._rng.randrange(low, 10**digits - 10**(digits - 2))
        value = self._next[prefix]
        self._next[prefix] = value + 1
        return f"{prefix}{value}"
