"""``expect_state``: the final state holds exactly the rows a case lists, or equals its reference's.

The rows form looks each row up by its key on the final state. The reference form compares two diffs
against the same fixture — the trial's and the one its ``reference`` calls made (``TrialView.expected``)
— rather than two databases, so its cost grows with the number of changed rows. Rows are matched by
primary key; inserted rows whose keys the world generated (``R-55821``: they differ between the trial
and the reference) are matched by their other columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from passhat.cases.assertions import ExpectState
from passhat.graders.base import TrialView
from passhat.graders.checks import where_sql
from passhat.world import Diff
from passhat.world.diff import RowChange, same_value

SHOWN = 5
"""How many differences a reason lists before summing up the rest."""


def primary_key(view: TrialView, table: str) -> list[str]:
    """The table's primary-key columns, in key order (empty when it declares none)."""
    info = view.tables.get(table)
    if info is not None:
        return [] if info.key == ("rowid",) else list(info.key)
    rows = view.query("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", (table,))  # a view built by hand
    return [r[0] for r in rows]


def _summary(problems: list[str]) -> str:
    more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    return "; ".join(problems[:SHOWN]) + more


def _label(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _rows_form(view: TrialView, a: ExpectState) -> tuple[bool, str]:
    table = str(a.table)
    key = a.key if a.key is not None else primary_key(view, table)
    if not key:
        raise ValueError(f"table {table} has no primary key; give `key`")
    problems = []
    for row in a.rows:
        ident = {c: row[c] for c in key}
        where, params = where_sql(ident)
        columns = list(row)
        selected = ", ".join(f'"{c}"' for c in columns)
        found = view.query(f'SELECT {selected} FROM "{table}"{where}', params)
        if not found:
            problems.append(f"no row with key {_label(ident)}")
        elif len(found) > 1:
            problems.append(f"{len(found)} rows with key {_label(ident)}, expected one")
        else:
            actual = dict(zip(columns, found[0], strict=True))
            wrong = [f"{c} expected {row[c]!r}, actual {actual[c]!r}" for c in columns if not same_value(actual[c], row[c])]
            if wrong:
                problems.append(f"row {_label(ident)}: " + ", ".join(wrong[:SHOWN]))
    for row in a.absent:
        where, params = where_sql(row)
        n = view.query(f'SELECT COUNT(*) FROM "{table}"{where}', params)[0][0]
        if n:
            problems.append(f"{n} row(s) with {_label(row)}, expected none")
    if problems:
        return False, f"{table}: " + _summary(problems)
    return True, f"{table}: {len(a.rows)} row(s) as expected" + (f", {len(a.absent)} absent" if a.absent else "")


def _counts(ch: RowChange, skip: set[str]) -> bool:
    """A change that matters: not an update of ignored columns only."""
    return ch.kind != "updated" or any(f not in skip for f in ch.changed_fields)


def _differing(expected: dict[str, Any] | None, actual: dict[str, Any] | None, skip: set[str]) -> list[str]:
    """Columns (outside ``skip``) whose values differ, as "col expected X, actual Y"."""
    exp, act = expected or {}, actual or {}
    return [f"{c} expected {exp.get(c)!r}, actual {act.get(c)!r}"
            for c in dict.fromkeys([*exp, *act]) if c not in skip and not same_value(exp.get(c), act.get(c))]


def _describe(ch: RowChange, skip: set[str]) -> str:
    if ch.kind == "deleted":
        return "deleted"
    after = ch.after or {}
    fields = [f for f in ch.changed_fields if f not in skip]
    return f"{ch.kind} ({_label({f: after[f] for f in fields})})"


def state_differences(actual: Diff, expected: Diff, ignore: dict[str, list[str]],
                      key_columns: Callable[[str], list[str]]) -> list[str]:
    """How the trial's row changes differ from the reference's, table by table (empty: the same)."""
    out: list[str] = []
    for table in sorted(set(actual.tables) | set(expected.tables)):
        skip = set(ignore.get(table, ()))
        exp = {c.key: c for c in expected.rows(table) if _counts(c, skip)}
        act = {c.key: c for c in actual.rows(table) if _counts(c, skip)}
        for key in [k for k in exp if k in act]:
            e, a = exp.pop(key), act.pop(key)
            if e.kind != a.kind:
                out.append(f"{table} {list(key)}: expected {e.kind}, actual {a.kind}")
            elif (cols := _differing(e.after, a.after, skip)):
                out.append(f"{table} {list(key)}: " + ", ".join(cols))
        generated = set(key_columns(table)) | skip  # inserts whose keys differ are matched on the rest
        new_exp = [c for c in exp.values() if c.kind == "inserted"]
        new_act = [c for c in act.values() if c.kind == "inserted"]
        for e in list(new_exp):
            twin = next((a for a in new_act if not _differing(e.after, a.after, generated)), None)
            if twin is not None:
                new_exp.remove(e)
                new_act.remove(twin)
                del exp[e.key], act[twin.key]
        for e, a in zip(new_exp, new_act, strict=False):  # unmatched inserts side by side: show how they differ
            del exp[e.key], act[a.key]
            out.append(f"{table} inserted {list(a.key)}: " + ", ".join(_differing(e.after, a.after, generated)))
        out += [f"{table} {list(k)}: expected {_describe(c, skip)}, did not happen" for k, c in exp.items()]
        out += [f"{table} {list(k)}: unexpected {_describe(c, skip)}" for k, c in act.items()]
    return out


def _reference_form(view: TrialView, a: ExpectState) -> tuple[bool, str]:
    if view.expected is None:
        return False, "no reference state to compare with: the case has no `reference:` calls"
    problems = state_differences(view.diff, view.expected, a.ignore, lambda t: primary_key(view, t))
    if problems:
        return False, f"{len(problems)} difference(s) from the reference's final state: " + _summary(problems)
    return True, f"the final state equals the reference's ({len(view.expected)} row change(s))"


def expect_state(view: TrialView, a: ExpectState) -> tuple[bool, str]:
    return _reference_form(view, a) if a.reference else _rows_form(view, a)
