"""``expect_state``: the final state holds exactly the rows a case lists, or equals its reference's.

The rows form looks each row up by its key on the final state. The reference form compares two diffs
against the same fixture — the trial's and the one its ``reference`` calls made (``TrialView.expected``)
— rather than two databases, so its cost grows with the number of changed rows. Rows are matched by
primary key; inserted rows whose keys the world generated (``R-55821``: they differ between the trial
and the reference) are matched by their other columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from passhat.cases.assertions.base import BuiltinAssertion, GradedSubject, RowTarget, Scalar, where_sql
from passhat.cases.assertions.fixture import Fixture
from passhat.cases.assertions.state_diff import SHOWN, pairs, state_differences, summary
from passhat.errors import CaseError
from passhat.world.diff import Diff, same_value

if TYPE_CHECKING:
    from passhat.graders.base import TrialView


def primary_key(view: TrialView, table: str) -> list[str]:
    """The table's primary-key columns, in key order (empty when it declares none)."""
    info = view.tables.get(table)
    if info is not None:
        return [] if info.key == ("rowid",) else list(info.key)
    rows = view.query("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", (table,))  # a view built by hand
    return [r[0] for r in rows]


class ExpectState(BuiltinAssertion):
    """The final state holds exactly these rows, or equals the state the case's ``reference`` calls produce.

    Rows form: ``- expect_state: {table: orders, rows: [{id: 4812, status: refunded}], absent: [{id: 9}]}``.
    Each row in ``rows`` must exist, found by its ``key`` columns (one row per key), with exactly the
    listed values (numbers by value; unlisted columns are not checked); no row may match an entry of
    ``absent``. Reference form: ``- expect_state: reference`` (or ``{reference: true, ignore: {table:
    [column]}}``): the trial's row changes must equal those the case's ``reference`` calls make on the
    same fixture — the same rows inserted, updated and deleted with the same values, and nothing else.
    Rows are matched by primary key; inserted rows whose keys were generated (and so differ) are matched
    by their other columns. Timestamps depend on how many calls were made: list them in ``ignore``.
    """

    subject: ClassVar[GradedSubject] = "state"
    shorthand: ClassVar[str | None] = "reference"

    kind: Literal["expect_state"] = "expect_state"
    table: str | None = None
    """Rows form: the table the rows belong to."""
    rows: list[dict[str, Scalar]] = Field(default_factory=list)
    """Rows form: rows that must exist, each with every key column and the values expected."""
    key: list[str] | None = None
    """Rows form: the columns that find a row (default: the table's primary key)."""
    absent: list[dict[str, Scalar]] = Field(default_factory=list)
    """Rows form: rows that must not exist; an entry matches a row equal on every column it lists."""
    reference: bool = False
    """Reference form: the final state must equal the one the case's ``reference`` calls produce."""
    ignore: dict[str, list[str]] = Field(default_factory=dict)
    """Reference form: columns, by table, whose values may differ from the reference's (e.g. timestamps)."""

    @field_validator("reference", mode="before")
    @classmethod
    def _reference_word(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value != "reference":
                raise ValueError(f"expect_state: {value!r} is not a form; the only word form is `expect_state: reference`, "
                                 "otherwise give {table: ..., rows: [...]} or {reference: true}")
            return True
        return value

    @model_validator(mode="after")
    def _one_form(self) -> ExpectState:
        rows_form = self.table is not None or self.rows or self.absent or self.key is not None
        if self.reference and rows_form:
            raise ValueError("expect_state has two forms: {reference: true, ignore: ...} or {table: ..., rows: [...], "
                             "absent: [...], key: [...]}, not both")
        if not self.reference and self.table is None:
            raise ValueError("expect_state needs `table` with `rows` and/or `absent`, or is `expect_state: reference`")
        if not self.reference and not (self.rows or self.absent):
            raise ValueError("expect_state needs at least one row in `rows` or `absent`")
        if self.ignore and not self.reference:
            raise ValueError("`ignore` belongs to the reference form (`{reference: true, ignore: {table: [column]}}`)")
        return self

    def label_target(self) -> str:
        return "reference" if self.reference else self.table or ""

    def rows_concerned(self, diff: Diff) -> list[RowTarget]:
        """Rows form: each listed row by its key, each absent one; reference form: wherever the trial changed
        something."""
        if self.table is None:
            return [(t, {}) for t in diff.tables]
        key = self.key
        wheres = [{k: row[k] for k in key if k in row} if key else dict(row) for row in self.rows]
        return [(self.table, w) for w in wheres + [dict(r) for r in self.absent]] or [(self.table, {})]

    def check(self, view: TrialView) -> tuple[bool, str]:
        return self._reference_form(view) if self.reference else self._rows_form(view)

    def _rows_form(self, view: TrialView) -> tuple[bool, str]:
        table = str(self.table)
        key = self.key if self.key is not None else primary_key(view, table)
        if not key:
            raise ValueError(f"table {table} has no primary key; give `key`")
        problems = []
        for row in self.rows:
            ident = {c: row[c] for c in key}
            where, params = where_sql(ident)
            columns = list(row)
            selected = ", ".join(f'"{c}"' for c in columns)
            found = view.query(f'SELECT {selected} FROM "{table}"{where}', params)
            if not found:
                problems.append(f"no row with key {pairs(ident)}")
            elif len(found) > 1:
                problems.append(f"{len(found)} rows with key {pairs(ident)}, expected one")
            else:
                actual = dict(zip(columns, found[0], strict=True))
                wrong = [f"{c} expected {row[c]!r}, actual {actual[c]!r}" for c in columns if not same_value(actual[c], row[c])]
                if wrong:
                    problems.append(f"row {pairs(ident)}: " + ", ".join(wrong[:SHOWN]))
        for row in self.absent:
            where, params = where_sql(row)
            n = view.query(f'SELECT COUNT(*) FROM "{table}"{where}', params)[0][0]
            if n:
                problems.append(f"{n} row(s) with {pairs(row)}, expected none")
        if problems:
            return False, f"{table}: " + summary(problems)
        return True, f"{table}: {len(self.rows)} row(s) as expected" + (f", {len(self.absent)} absent" if self.absent else "")

    def _reference_form(self, view: TrialView) -> tuple[bool, str]:
        if view.expected is None:
            return False, "no reference state to compare with: the case has no `reference:` calls"
        problems = state_differences(view.diff, view.expected, self.ignore, lambda t: primary_key(view, t))
        if problems:
            return False, f"{len(problems)} difference(s) from the reference's final state: " + summary(problems)
        return True, f"the final state equals the reference's ({len(view.expected)} row change(s))"

    def check_fixture(self, field: str, fixture: Fixture) -> None:
        """Tables and columns it names exist (``table`` only in the rows form); every row names the key."""
        for name, cols in self.ignore.items():
            fixture.columns(fixture.table(name, f"{field}.ignore.{name}"), cols, f"{field}.ignore.{name}")
        if self.table is None:
            return
        t = fixture.table(self.table, f"{field}.table")
        file = fixture.file
        if self.key is None and t.key == ("rowid",):
            raise CaseError(file, f"{field}.key", f"table {t.name} has no primary key: say which columns find a row, "
                                                  f"e.g. key: [{t.columns[0]}] (columns: {', '.join(t.columns)})")
        key = self.key if self.key is not None else list(t.key)
        fixture.columns(t, key, f"{field}.key")
        if not key:
            raise CaseError(file, f"{field}.key", f"name at least one column of {t.name} ({', '.join(t.columns)})")
        for j, row in enumerate(self.rows):
            fixture.columns(t, row, f"{field}.rows.{j}")
            missing = [k for k in key if k not in row]
            if missing:
                raise CaseError(file, f"{field}.rows.{j}", f"the row lacks key column(s) {', '.join(missing)} "
                                                           f"(key: {', '.join(key)}); every row names its key")
        for j, row in enumerate(self.absent):
            if not row:
                raise CaseError(file, f"{field}.absent.{j}", "an absent row names at least one column (e.g. its key), "
                                                             "or it would match every row")
            fixture.columns(t, row, f"{field}.absent.{j}")


KINDS: tuple[type[BuiltinAssertion], ...] = (ExpectState,)
"""This family's kinds, in the order the reference documents them."""
