"""State grader: what the agent actually did to the world, not what it said.

Each assertion gives one grade with expected vs actual. Numbers compare by value. Queries run
read-only on the final state; ``net_change`` and ``unchanged_except`` read only the diff, so their
cost grows with the number of changed rows.
"""

from __future__ import annotations

from typing import Any

from passhat.cases import assertions as A
from passhat.graders.base import Grade, TrialView
from passhat.graders.checks import Check, describe, grade_assertions, where_sql
from passhat.graders.expected import expect_state
from passhat.graders.files import FILE_CHECKS, files_outside
from passhat.world.diff import RowChange, same_value


def _matches(row: dict[str, Any] | None, where: dict[str, Any]) -> bool:
    return row is not None and all(k in row and same_value(row[k], v) for k, v in where.items())


def _expected(view: TrialView, value: Any) -> Any:
    if isinstance(value, A.SqlValue):
        rows = view.query(value.sql, ())
        if len(rows) != 1 or len(rows[0]) != 1:
            raise ValueError(f"expected-value query must return one value, got {rows!r}: {value.sql}")
        return rows[0][0]
    return value


def _normalise(result: list[tuple[Any, ...]]) -> Any:
    if len(result) == 1 and len(result[0]) == 1:
        return result[0][0]
    if len(result) == 1:
        return list(result[0])
    return [list(r) for r in result]


def _deep_equal(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    return same_value(a, b)


def row_count(view: TrialView, a: A.RowCount) -> tuple[bool, str]:
    where, params = where_sql(a.where)
    n = view.query(f'SELECT COUNT(*) FROM "{a.table}"{where}', params)[0][0]
    return n == a.equals, f"count of {describe(a.table, a.where)}: expected {a.equals}, actual {n}"


def field_equals(view: TrialView, a: A.FieldEquals) -> tuple[bool, str]:
    where, params = where_sql(a.where)
    values = [r[0] for r in view.query(f'SELECT "{a.field}" FROM "{a.table}"{where}', params)]
    want = _expected(view, a.equals)
    label = describe(f"{a.table}.{a.field}", a.where)
    if not values:
        return False, f"{label}: expected {want!r}, but no row matches"
    wrong = [v for v in values if not same_value(v, want)]
    if wrong:
        return False, f"{label}: expected {want!r}, actual {wrong[0]!r}" + (f" ({len(wrong)} rows)" if len(wrong) > 1 else "")
    return True, f"{label}: {want!r} in {len(values)} row(s)"


def sql_check(view: TrialView, a: A.SqlCheck) -> tuple[bool, str]:
    got = _normalise(view.query(a.query, ()))
    ok = _deep_equal(got, a.expect)
    return ok, f"query result: expected {a.expect!r}, actual {got!r}"


def net_change(view: TrialView, a: A.NetChange) -> tuple[bool, str]:
    delta = 0.0
    for ch in view.diff.rows(a.table):
        if _matches(ch.after, a.where):
            delta += float(ch.after[a.column] or 0)  # type: ignore[index]
        if _matches(ch.before, a.where):
            delta -= float(ch.before[a.column] or 0)  # type: ignore[index]
    want = _expected(view, a.equals)
    ok = same_value(round(delta, 9), want)
    return ok, f"net change of {a.table}.{a.column} ({describe(a.table, a.where)}): expected {want!r}, actual {delta:g}"


def in_scope(ch: RowChange, scopes: list[A.RowScope]) -> bool:
    """The scopes matching the changed row allow the change: one without ``columns`` allows anything; otherwise
    the columns of all matching scopes together must cover the update (an insert or delete changes every
    column, so it is out of a column scope)."""
    matching = [s for s in scopes if _matches(ch.before, s.where) or _matches(ch.after, s.where)]
    if not matching or any(s.columns is None for s in matching):
        return bool(matching)
    allowed = {c for s in matching for c in s.columns or []}
    return ch.kind == "updated" and set(ch.changed_fields) <= allowed


def unchanged_except(view: TrialView, a: A.UnchangedExcept) -> tuple[bool, str]:
    scopes: dict[str, list[A.RowScope]] = {}
    for s in a.rows:
        scopes.setdefault(s.table, []).append(s)
    outside = []
    for ch in view.diff.rows():
        if ch.table in a.tables:
            continue
        if in_scope(ch, scopes.get(ch.table, [])):
            continue
        outside.append(f"{ch.table} {ch.kind} {list(ch.key)} ({', '.join(ch.changed_fields)})")
    outside += files_outside(view, a.files)
    if outside:
        return False, f"{len(outside)} change(s) outside the allowed scope: " + "; ".join(outside[:5])
    inside = len(view.diff) + (len(view.files.changes) if view.files is not None else 0)
    return True, f"no change outside the allowed scope ({inside} change(s) inside)"


STATE_CHECKS: dict[str, Check] = {
    "row_count": row_count, "field_equals": field_equals, "sql": sql_check, "net_change": net_change,
    "unchanged_except": unchanged_except, "expect_state": expect_state, **FILE_CHECKS,
}


def grade_state(view: TrialView) -> list[Grade]:
    """One grade per final-state assertion (built-in and custom state graders alike)."""
    return grade_assertions(view, "state", STATE_CHECKS)
