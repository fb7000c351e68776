"""A JSON database (τ-bench's ``data``) as a passhat world that costs what a call changes.

:class:`JsonCollections` is the public part, also meant for other importers whose tools take a dict of
collections of JSON records (``{"orders": {"#W0001": {...}}, ...}``)::

    store = JsonCollections(data)                     # {collection: {key: record}}, as the JSON files hold it
    domain = Domain(..., schema=store.schema(), fixtures={"default": store.load})
    def call(ctx, **args):                            # inside a passhat tool
        return store.call(ctx.world, lambda data: some_tool(data, **args))

The trial's SQLite tables (:mod:`.tables`: a row per record, a column per field) stay the truth: the
world diff, ``expect_state`` and every state assertion read them. What the tools see is kept in memory:

- **one decoded copy per process**, the initial records, made when the fixture is built and shared by
  every trial; a read by key or a scan of a collection touches only these (no SQL, no JSON decoding);
- **per trial**, its own copies of the records it changed, and nothing else: no copy of a collection.
  While one of its calls runs they stand in the shared collections in place of the fixture's records
  (a record it added at the end, one it deleted taken out); when the call ends the shared collections
  are put back. Calls take a lock, so no other trial's call sees them;
- **per call**, the records it changed: their dicts and lists report changes (:mod:`.tracked`), so after
  the call only those are re-encoded, compared with their stored rows and written. A read writes
  nothing. A shared record a tool changes in place is copied just before its first change (or a spare
  copy made when the world was opened is taken: :meth:`JsonCollections.prepare`); after the call the
  changed one is the trial's and the copy goes back into the shared collection.

A call that raises changes nothing here either (the boundary rolls the trial's database back; the
records the call touched are restored). The memory is checked against the database at the start of a
call: when anything else changed the trial's tables, or a write was rolled back after the call, the
trial's records are re-read from the rows the change log names. Nothing is cached that the database
does not say.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from passhat.errors import DomainError
from passhat.tau_bench.tables import Layout, Row, quote
from passhat.tau_bench.tracked import Cell, TrackedRecord, TrackedTable, owned_record, record
from passhat.world.image import LOG_TABLE

if TYPE_CHECKING:
    from passhat.world import World

T = TypeVar("T")
Changes = dict[Any, dict[int, Any] | None]
"""What a call changed in one record: per field, the containers in it that changed (by ``id``), or ``None``
when the field itself was set or deleted."""
_ABSENT = object()
SPARES = 20_000
"""At most this many spare copies of shared records (:meth:`JsonCollections.prepare`): memory stays within about
one more copy of the records calls change, however long the run."""


def same_row(a: Row | None, b: Row | None) -> bool:
    """Rows are the same when every value is equal *and of the same type*: ``25`` and ``25.0`` differ, as
    they do in τ-bench's hash, so a write of either is stored as the tool made it."""
    if a is None or b is None:
        return a is b
    return a == b and all(type(x) is type(y) for x, y in zip(a, b, strict=True))


@dataclass
class _Trial:
    """What one trial changed: its records (put in the shared collections while its calls run) and rows."""

    own: dict[str, dict[str, Any]]
    """Per collection, the records this trial changed, as its own objects (``_ABSENT``: a fixture record it
    deleted), in the order it first changed them: a record it added goes at the end of the collection."""
    rows: dict[str, dict[str, Row | None]]
    """Per collection, the rows of this trial that differ from the fixture (``None``: deleted)."""
    changes: int
    """The connection's ``total_changes`` after this trial's last call."""
    grew_from: int | None
    """Where the change log ended before this trial's last call, when that call wrote: the log must have
    grown past it (a write the boundary rolled back after the call leaves it there); ``None`` when the
    call wrote nothing."""


class JsonCollections:
    """Collections of JSON records as SQLite tables, handed to tools as the dicts they expect."""

    def __init__(self, data: Mapping[str, Any], sources: Mapping[str, str] | None = None) -> None:
        """``data`` is ``{collection: {key: record}}``; ``sources`` names where each collection came from (for
        errors: ``data/orders.json``)."""
        sources = sources or {}
        self.layouts: dict[str, Layout] = {name: Layout.of(name, records, sources.get(name, name))
                                           for name, records in data.items()}
        """How each collection is stored (:class:`~passhat.tau_bench.tables.Layout`)."""
        self._fixture: dict[str, dict[str, Row]] = {
            name: {key: layout.encode(key, record) for key, record in data[name].items()}
            for name, layout in self.layouts.items()}
        self._base: dict[str, dict[str, TrackedRecord]] | None = None
        """Per collection, the fixture's records, decoded once and shared by every trial."""
        self._tables: dict[str, TrackedTable] = {}
        """Per collection, the dict every call gets: the fixture's records, with the calling trial's own in
        their place while its call runs."""
        self._trials: weakref.WeakKeyDictionary[World, _Trial] = weakref.WeakKeyDictionary()
        self._lock = threading.RLock()
        self._dirty: dict[tuple[str, str], Changes | None] | None = None
        """The records the call in progress changed, each with the fields it changed (``None``: any field) and,
        per field, the containers in it that changed (by ``id``; ``None``: the field was set or deleted);
        ``None`` when no call is in progress."""
        self._own: dict[str, dict[str, Any]] = {}
        """The calling trial's own records (:attr:`_Trial.own`)."""
        self._hits: dict[tuple[str, str], TrackedRecord] = {}
        """The shared records the call in progress changed, each with a copy taken before its first change."""
        self._moved: set[str] = set()
        """Collections whose order the call in progress disturbed (a key taken out): rebuilt afterwards."""
        self._spares: dict[tuple[str, str], TrackedRecord] = {}
        """Untouched copies of shared records that calls changed before, made by :meth:`prepare` (at a world's
        reset), so the call that next changes one takes its copy ready-made instead of copying in the call."""
        self._spent: set[tuple[str, str]] = set()
        """The shared records calls changed since :meth:`prepare` last ran (each needs a new spare)."""

    # --- the fixture --------------------------------------------------------------------------------

    def schema(self) -> str:
        """``CREATE TABLE`` statements for every collection."""
        return "\n".join(layout.schema() for layout in self.layouts.values())

    def load(self, db: sqlite3.Connection) -> None:
        """The fixture loader: every record as a row (and the shared decoded copy, made once)."""
        for name, layout in self.layouts.items():
            layout.insert(db, list(self._fixture[name].values()))
        self._shared()

    def _shared(self) -> dict[str, dict[str, TrackedRecord]]:
        with self._lock:
            if self._base is None:
                self._base = {name: {key: record(layout.decode(row), self._mark, name, key)
                                     for key, row in self._fixture[name].items()}
                              for name, layout in self.layouts.items()}
                self._tables = {name: TrackedTable(name, records, self._report)
                                for name, records in self._base.items()}
            return self._base

    def prepare(self) -> None:
        """A trial is about to start: make a spare copy of each shared record a call changed since the last
        time (up to :data:`SPARES`). Restoring the shared records is reset work: done here, the copy a call
        needs when it first changes a shared record is ready (a ~1 kB order is ~10 µs to copy), and a
        record no call ever changed costs nothing. Without it (a world opened some other way) a call copies."""
        with self._lock:
            if self._dirty is not None or self._base is None:
                return
            spent, self._spent = self._spent, set()
            for name, key in spent:
                shared = self._base[name].get(key)
                if shared is not None and len(self._spares) < SPARES:
                    self._spares[(name, key)] = record(shared, self._mark, name, key)

    # --- one call -----------------------------------------------------------------------------------

    def call(self, world: World, fn: Callable[[dict[str, Any]], T]) -> T:
        """``fn(data)`` as one tool call on ``world``'s tables: ``data`` is ``{collection: {key: record}}``;
        what ``fn`` changes in it is written to the tables when it returns, and forgotten when it raises."""
        db = world.db
        with self._lock:
            if self._dirty is not None:
                raise RuntimeError("a τ-bench tool call inside another: each call is one change of the world")
            start = _log_mark(world, db)
            trial = self._trial(world, db, start)
            tables = self._tables
            self._dirty, self._hits, self._moved, self._own = {}, {}, set(), trial.own
            try:
                self._swap_in(trial)
                given = dict(tables)
                result = fn(given)
                if given.keys() != tables.keys() or any(given[n] is not t for n, t in tables.items()):
                    raise DomainError("a tool replaced a whole collection of `data`; τ-bench tools change records "
                                      "and keys within a collection")
                wrote = self._write(trial, db) if self._dirty else False
            except BaseException:
                self._revert(trial)
                raise
            finally:
                self._swap_out(trial)
                self._dirty = None
            trial.changes = db.total_changes
            trial.grew_from = start if wrote else None
            return result

    def _mark(self, cell: Cell, container: Any) -> None:
        """``container`` of a record is about to change (the record's ``cell[3]`` field; ``None``: any field;
        when ``container`` is the record itself, the field is set or deleted)."""
        dirty = self._dirty
        if dirty is None:
            raise RuntimeError(f"τ-bench record {cell[1]}[{cell[2]!r}] changed outside a tool call: only a call's "
                               "changes are written to the trial's world")
        name, key, field = cell[1], cell[2], cell[3]
        where = (name, key)
        if field is None:
            dirty[where] = None
        elif where not in dirty:
            dirty[where] = {field: None if type(container) is TrackedRecord else {id(container): container}}
        elif (fields := dirty[where]) is not None:
            if type(container) is TrackedRecord:
                fields[field] = None
            elif field not in fields:
                fields[field] = {id(container): container}
            elif (inside := fields[field]) is not None:
                inside[id(container)] = container
        if where not in self._hits and key not in self._own[name]:  # a shared record: others must keep seeing it
            shared = self._base[name].get(key) if self._base is not None else None
            if shared is not None:
                spare = self._spares.pop(where, None)
                self._hits[where] = spare if spare is not None else record(shared, self._mark, name, key)
                self._spent.add(where)

    def _report(self, name: str, key: str, removes: bool) -> None:
        """A key of a collection is about to be set or (``removes``) taken out."""
        dirty = self._dirty
        if dirty is None:
            raise RuntimeError(f"τ-bench collection {name!r} changed outside a tool call: only a call's "
                               "changes are written to the trial's world")
        if removes:
            self._moved.add(name)
        dirty[(name, key)] = None

    # --- a trial's records ----------------------------------------------------------------------------

    def _swap_in(self, trial: _Trial) -> None:
        """Put the trial's own records in the shared collections, for the length of one call."""
        for name, records in trial.own.items():
            if records:
                table = self._tables[name]
                for key, record in records.items():
                    if record is _ABSENT:
                        self._moved.add(name)
                        dict.pop(table, key, None)
                    else:
                        dict.__setitem__(table, key, record)

    def _swap_out(self, trial: _Trial) -> None:
        """Make the shared collections the fixture's again: the shared records the call changed replaced by
        their copies, the trial's records and the keys the call set taken out; a collection whose order was
        disturbed is rebuilt."""
        base = self._shared()
        for (name, key), before in self._hits.items():
            base[name][key] = before
        touched: dict[str, list[str]] = {}
        for name, key in self._dirty or ():
            touched.setdefault(name, []).append(key)
        for name, records in trial.own.items():
            if records:
                touched.setdefault(name, []).extend(records)
        for name, keys in touched.items():
            table, records = self._tables[name], base[name]
            if name in self._moved:
                dict.clear(table)
                dict.update(table, records)
                continue
            for key in keys:
                if key in records:
                    dict.__setitem__(table, key, records[key])
                else:
                    dict.pop(table, key, None)
        self._hits, self._moved = {}, set()

    def _trial(self, world: World, db: sqlite3.Connection, end: int) -> _Trial:
        """The trial's state, checked against the database (re-read from it when something else wrote);
        ``end`` is where the change log ends now."""
        trial = self._trials.get(world)
        if trial is not None and trial.changes == db.total_changes and (
                trial.grew_from is None or end > trial.grew_from):
            return trial
        trial = self._read_trial(db, end)
        self._trials[world] = trial
        return trial

    def _read_trial(self, db: sqlite3.Connection, end: int) -> _Trial:
        """The trial's state from its tables: the fixture plus every row its change log names."""
        rows: dict[str, dict[str, Row | None]] = {name: {} for name in self.layouts}
        if not end:  # a fresh trial (its first call): nothing to read
            return _Trial({name: {} for name in self.layouts}, rows, db.total_changes, None)
        logged = db.execute(f"SELECT tbl, pk FROM {LOG_TABLE} GROUP BY tbl, pk ORDER BY MIN(seq)").fetchall()
        for table, pk in logged:
            layout = self.layouts.get(table)
            if layout is None:
                continue
            key = json.loads(pk)[0]
            found = db.execute(f"{layout.select} WHERE {quote(layout.key)} = ?", (key,)).fetchone()
            row = tuple(found) if found is not None else None
            if not same_row(row, self._fixture[table].get(key)):
                rows[table][key] = row
        own = {name: {key: self._decode(name, key, row) for key, row in rows[name].items()} for name in self.layouts}
        return _Trial(own, rows, db.total_changes, None)

    def _decode(self, name: str, key: str, row: Row | None) -> Any:
        """The trial's own record of a row (``_ABSENT`` for a deleted one)."""
        return record(self.layouts[name].decode(row), self._mark, name, key) if row is not None else _ABSENT

    def _write(self, trial: _Trial, db: sqlite3.Connection) -> bool:
        """Store the records the call changed; ``True`` when a row was written. Every row is encoded before
        the first is written, so a record that cannot be stored fails the call with nothing written. A
        record the call changed only some fields of gets only those encoded again."""
        assert self._dirty is not None
        plans: list[tuple[str, str, Any, Row | None, Row | None, Changes | None]] = []
        for (name, key), fields in self._dirty.items():
            layout, mine = self.layouts[name], trial.rows[name]
            old = mine[key] if key in mine else self._fixture[name].get(key)
            found = dict.get(self._tables[name], key, _ABSENT)
            if found is _ABSENT:
                new = None
            elif fields is None or old is None:
                new = layout.encode(key, found)
            else:  # the same record object as before the call: its key was not set in this call
                new = layout.encode_fields(found, old, fields)
            plans.append((name, key, found, old, new, fields))
        wrote = False
        for name, key, _found, old, new, _fields in plans:
            if not same_row(old, new):
                _store(db, self.layouts[name], key, old, new)
                wrote = True
        for name, key, found, _old, new, fields in plans:
            if same_row(new, self._fixture[name].get(key)):
                trial.rows[name].pop(key, None)
            else:
                trial.rows[name][key] = new
            own = trial.own[name]
            if found is not _ABSENT:  # the trial's own record: no container shared with another place
                own[key] = owned_record(found, self._mark, name, key, fields)
            elif key in self._fixture[name]:
                own[key] = _ABSENT
            else:
                own.pop(key, None)
        return wrote

    def _revert(self, trial: _Trial) -> None:
        """Forget what a failed call did to the trial's records: each one it changed is read again from the
        trial's rows (the shared ones are put back by :meth:`_swap_out`)."""
        for name, key in self._dirty or {}:
            rows, own = trial.rows[name], trial.own[name]
            if key in rows:
                own[key] = self._decode(name, key, rows[key])
            else:
                own.pop(key, None)


def _log_mark(world: World, db: sqlite3.Connection) -> int:
    """Where the change log ends: the world's mark, which the tool boundary has just read (no query then)."""
    try:
        mark = world.change_mark()
        if mark is None:
            return int(db.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {LOG_TABLE}").fetchone()[0])
    except sqlite3.Error as exc:
        raise DomainError(f"a τ-bench world needs the in-memory SQLite fixture with its change log ({exc})") from exc
    return mark


def _store(db: sqlite3.Connection, layout: Layout, key: str, old: Row | None, new: Row | None) -> None:
    if new is None:
        db.execute(f"DELETE FROM {quote(layout.table)} WHERE {quote(layout.key)} = ?", (key,))
    elif old is None:
        layout.insert(db, [new])
    else:  # only the columns that changed: less to bind and to store
        changed = tuple(i for i in range(1, len(new)) if not (old[i] == new[i] and type(old[i]) is type(new[i])))
        db.execute(layout.update(changed), (*(new[i] for i in changed), key))


__all__ = ["JsonCollections", "same_row"]
