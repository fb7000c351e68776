"""Rows of the final state: how many, which values, what a query returns, how a sum changed.

What the agent actually did to the world, not what it said. Numbers compare by value. Queries run
read-only on the final state; ``net_change`` reads only the diff, so its cost grows with the number of
changed rows.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from passhat.cases.assertions.base import (
    BuiltinAssertion,
    Expected,
    GradedSubject,
    RowTarget,
    Scalar,
    SqlValue,
    describe,
    expected_value,
    where_sql,
)
from passhat.cases.assertions.fixture import Fixture
from passhat.world.diff import Diff, RowChange, same_value

if TYPE_CHECKING:
    from passhat.graders.base import TrialView

SQL_TABLE = re.compile(r'\b(?:from|join)\s+"?([A-Za-z_][A-Za-z0-9_]*)', re.IGNORECASE)
"""The tables a query reads (good enough for attribution: a missed one only leaves a step unnamed)."""


def matches(row: dict[str, Any] | None, where: dict[str, Any]) -> bool:
    """The row exists and equals ``where`` on every column it names (numbers by value)."""
    if row is None:
        return False
    for k, v in where.items():  # a loop, not all() over a generator: scopes test every changed row
        if k not in row or not same_value(row[k], v):
            return False
    return True


class RowCount(BuiltinAssertion):
    """Number of rows in ``table`` matching ``where`` equals ``equals``."""

    subject: ClassVar[GradedSubject] = "state"

    kind: Literal["row_count"] = "row_count"
    table: str
    """Table to check."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed. Numbers match by value (25 == 25.0)."""
    equals: int = Field(ge=0)
    """Expected number of rows."""

    def check(self, view: TrialView) -> tuple[bool, str]:
        where, params = where_sql(self.where)
        n = view.query(f'SELECT COUNT(*) FROM "{self.table}"{where}', params)[0][0]
        return n == self.equals, f"count of {describe(self.table, self.where)}: expected {self.equals}, actual {n}"


class FieldEquals(BuiltinAssertion):
    """Every row matching ``where`` (at least one must) has ``field`` equal to ``equals``."""

    subject: ClassVar[GradedSubject] = "state"

    kind: Literal["field_equals"] = "field_equals"
    table: str
    """Table to check."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""
    field: str
    """Column whose value is checked."""
    equals: Expected
    """Expected value: a literal or ``{sql: ...}`` evaluated on the final state."""

    def check(self, view: TrialView) -> tuple[bool, str]:
        where, params = where_sql(self.where)
        values = [r[0] for r in view.query(f'SELECT "{self.field}" FROM "{self.table}"{where}', params)]
        want = expected_value(view, self.equals)
        label = describe(f"{self.table}.{self.field}", self.where)
        if not values:
            return False, f"{label}: expected {want!r}, but no row matches"
        wrong = [v for v in values if not same_value(v, want)]
        if wrong:
            return False, f"{label}: expected {want!r}, actual {wrong[0]!r}" + (f" ({len(wrong)} rows)" if len(wrong) > 1 else "")
        return True, f"{label}: {want!r} in {len(values)} row(s)"

    def wrong_rows(self, changes: list[RowChange]) -> list[RowChange]:
        """With a literal value: the matching rows whose value is wrong (the culprits)."""
        if isinstance(self.equals, SqlValue):
            return []
        return [ch for ch in changes if ch.after is not None and not same_value(ch.after.get(self.field), self.equals)]


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


class SqlCheck(BuiltinAssertion):
    """A read-only query whose result must equal ``expect`` (a scalar, a row, or a list of rows)."""

    subject: ClassVar[GradedSubject] = "state"

    kind: Literal["sql"] = "sql"
    query: str
    """Read-only SQL (SELECT or WITH) run on the final state. A query gets 100 million SQLite steps
    (about a second): one that runs away on the fixture (a ``WITH RECURSIVE`` that never stops) is
    rejected when the suite loads, one that runs away on a final state fails its grade."""
    expect: Any
    """Expected result: a scalar for one value, a list for one row, a list of lists for several rows."""

    def check(self, view: TrialView) -> tuple[bool, str]:
        got = _normalise(view.query(self.query, ()))
        return _deep_equal(got, self.expect), f"query result: expected {self.expect!r}, actual {got!r}"

    def rows_concerned(self, diff: Diff) -> list[RowTarget]:
        """The tables it reads: any of their rows may be the one."""
        return [(t, {}) for t in dict.fromkeys(SQL_TABLE.findall(self.query))]

    def check_fixture(self, field: str, fixture: Fixture) -> None:
        super().check_fixture(field, fixture)
        fixture.sql(self.query, f"{field}.query")


class NetChange(BuiltinAssertion):
    """Sum of ``column`` over rows matching ``where`` changed by exactly ``equals`` (final − initial)."""

    subject: ClassVar[GradedSubject] = "state"

    kind: Literal["net_change"] = "net_change"
    table: str
    """Table to check."""
    column: str
    """Column used by the check (summed for ``net_change``, looked for in the reply for ``reply_mentions``)."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""
    equals: Expected
    """Expected value: a literal or ``{sql: ...}`` evaluated on the final state."""

    def check(self, view: TrialView) -> tuple[bool, str]:
        delta = 0.0
        for ch in view.diff.rows(self.table):
            if matches(ch.after, self.where):
                delta += float(ch.after[self.column] or 0)  # type: ignore[index]
            if matches(ch.before, self.where):
                delta -= float(ch.before[self.column] or 0)  # type: ignore[index]
        want = expected_value(view, self.equals)
        ok = same_value(round(delta, 9), want)
        return ok, (f"net change of {self.table}.{self.column} ({describe(self.table, self.where)}): "
                    f"expected {want!r}, actual {delta:g}")


KINDS: tuple[type[BuiltinAssertion], ...] = (RowCount, FieldEquals, SqlCheck, NetChange)
"""This family's kinds, in the order the reference documents them."""
