"""Read-only queries with a step budget, so a runaway assertion fails instead of hanging the run.

Case authors write SQL (``sql`` assertions, ``{sql: ...}`` expected values); a ``WITH RECURSIVE``
without a stopping condition never returns, and SQLite will not stop it by itself. SQLite's progress
handler counts virtual-machine steps; past the budget the query is interrupted. A step budget rather
than a clock: the same query on the same state is stopped at the same point on any machine, under any
load, so a verdict never depends on how busy the host was.
"""

from __future__ import annotations

import sqlite3
from typing import Any

QUERY_STEP_BUDGET = 100_000_000
"""SQLite virtual-machine steps one query may take: about a second here (≈ 85 M steps/s), a thousand
times what a grading query over a 150,000-row fixture needs."""
_CHECK_EVERY = 10_000
"""Steps between two calls of the progress handler (each call costs a Python function call)."""


class QueryBudgetExceeded(Exception):
    """A query ran past :data:`QUERY_STEP_BUDGET`."""


def bounded_query(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] | dict[str, Any] = (), *,
                  steps: int | None = None, shown: str | None = None) -> list[tuple[Any, ...]]:
    """All rows of ``sql``, or :class:`QueryBudgetExceeded` once it has taken ``steps`` (default
    :data:`QUERY_STEP_BUDGET`) steps. ``shown``: the query as its author wrote it, for the error (``sql``
    may carry the harness's mark, ``world/read_guard.py``)."""
    steps = QUERY_STEP_BUDGET if steps is None else steps
    calls = 0

    def over_budget() -> bool:
        nonlocal calls
        calls += 1
        return calls * _CHECK_EVERY > steps

    conn.set_progress_handler(over_budget, _CHECK_EVERY)
    try:
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]
    except sqlite3.OperationalError:
        if calls * _CHECK_EVERY > steps:
            raise QueryBudgetExceeded(
                f"query stopped after {steps:,} SQLite steps without finishing (a runaway query, e.g. a WITH RECURSIVE "
                f"without a stopping condition; bound it with WHERE or LIMIT): {sql if shown is None else shown}") from None
        raise
    finally:
        conn.set_progress_handler(None, 0)
