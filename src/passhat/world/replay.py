"""Rebuilding a final state from a stored diff: the fixture image plus the trial's row changes.

A trial record keeps the row-level diff, not the database. Re-grading needs the final state again
(``sql`` and ``{sql: ...}`` assertions query it), so we restore the fixture and apply the diff: deletes,
then updates (only the columns that changed), then inserts, each by primary key. Before a row is
touched, its current value must equal the diff's *before* row — otherwise the fixture is not the one
the trial ran against, and silently applying the change would grade a state that never existed.

The state is reproduced by primary key: a table's hidden ``rowid`` may differ when it declares its
own key (a trial that deleted and re-inserted a row replays as an update), so a query that relies on
the physical row order rather than ``ORDER BY`` is not guaranteed to see the same order.

Values the run redacted (``[REDACTED:email]`` …) cannot be compared, so such columns are not checked;
an inserted row keeps the redacted text (documented in docs/datasets.md).

The same machinery replays an external tool's recorded side effects (``tools/cassette.py``):
:func:`log_position` and :func:`changes_since` capture what one call changed.
"""

from __future__ import annotations

from typing import Any

from passhat.world.diff import Diff, RowChange, same_value
from passhat.world.image import LOG_TABLE, FixtureImage, TableInfo, _quote
from passhat.world.sqlite_kind import SqliteCopy, changes_after
from passhat.world.world import World

REDACTED_MARK = "[REDACTED:"


class ReplayError(Exception):
    """A stored diff does not fit the fixture it is applied to (the fixture or schema changed)."""


def _unknown(stored: Any) -> bool:
    return isinstance(stored, str) and REDACTED_MARK in stored


def _sqlite(target: World | SqliteCopy) -> SqliteCopy:
    return target.sqlite if isinstance(target, World) else target


def _check(world: SqliteCopy, table: TableInfo, change: RowChange) -> None:
    current = world.current(table, change.key)
    where = f"{table.name} {list(change.key)}"
    if change.before is None:
        if current is not None:
            raise ReplayError(f"{where}: inserted by the trial, but the fixture already has this row")
        return
    if current is None:
        raise ReplayError(f"{where}: the trial {change.kind} it, but the fixture has no such row")
    for col, old in change.before.items():
        if col not in current:
            raise ReplayError(f"{where}: column {col!r} is not in the current schema")
        if not _unknown(old) and not same_value(old, current[col]):
            raise ReplayError(f"{where}.{col}: the trial started from {old!r}, the fixture now has {current[col]!r}")


def _key_sql(table: TableInfo) -> str:
    return " AND ".join(f"{_quote(c)} IS ?" for c in table.key)


def _apply_one(world: SqliteCopy, table: TableInfo, change: RowChange) -> None:
    q = _quote(table.name)
    if change.after is None:
        world.db.execute(f"DELETE FROM {q} WHERE {_key_sql(table)}", change.key)
    elif change.before is None:
        row = dict(change.after)
        if table.key == ("rowid",):
            row = {"rowid": change.key[0], **row}
        cols = ", ".join(_quote(c) for c in row)
        marks = ", ".join("?" for _ in row)
        world.db.execute(f"INSERT INTO {q} ({cols}) VALUES ({marks})", tuple(row.values()))
    else:
        changed = change.changed_fields
        if changed:
            sets = ", ".join(f"{_quote(c)} = ?" for c in changed)
            params = tuple(change.after[c] for c in changed) + tuple(change.key)
            world.db.execute(f"UPDATE {q} SET {sets} WHERE {_key_sql(table)}", params)


def apply_diff(target: World | SqliteCopy, diff: Diff, *, verify: bool = True) -> None:
    """Apply a stored diff to a world in its fixture state (``verify``: check every before-row first).

    Deletes go first and inserts last, so a trial that deleted a row and inserted another with the same
    unique value replays without a constraint error.
    """
    world = _sqlite(target)
    order = {"deleted": 0, "updated": 1, "inserted": 2}
    changes = sorted(diff.rows(), key=lambda c: order[c.kind])
    for change in changes:
        table = world.tables.get(change.table)
        if table is None:
            raise ReplayError(f"table {change.table!r} of the stored diff is not in the fixture; tables: {sorted(world.tables)}")
        if verify:
            _check(world, table, change)
    for change in changes:
        try:
            _apply_one(world, world.tables[change.table], change)
        except Exception as exc:  # sqlite3 constraint or type errors: the schema changed since the run
            raise ReplayError(f"{change.table} {list(change.key)}: cannot apply the stored {change.kind}: {exc}") from exc


def rebuild_final_state(image: FixtureImage, diff: Diff | dict[str, Any], seed: int = 0) -> World:
    """A world restored from ``image`` with ``diff`` applied; call ``close()`` on it when done."""
    stored = Diff.from_json(diff) if isinstance(diff, dict) else diff
    world = World.restore(image, seed)
    try:
        apply_diff(world, stored)
    except BaseException:
        world.close()
        raise
    return world


def log_position(world: World) -> int:
    """The last change-log sequence number: mark it before a call, then read :func:`changes_since`."""
    row = _sqlite(world).db.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {LOG_TABLE}").fetchone()
    return int(row[0])


def changes_since(world: World, seq: int) -> Diff:
    """Rows changed after log position ``seq`` (before: as they were at ``seq``; after: as they are now)."""
    return changes_after(_sqlite(world), seq)
