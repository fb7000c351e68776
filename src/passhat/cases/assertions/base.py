"""What a built-in assertion kind is: one class that declares, next to its fields, everything about it.

- ``subject``: the grader that owns it (``state`` or ``reply``); that grader grades every assertion with
  its subject, so none goes ungraded.
- ``shorthand``: the field a scalar value fills (``reply_contains: "38.5"`` is ``{text: "38.5"}``).
- ``needs_workspace``: a case whose fixture has no workspace is refused when the suite loads.
- :meth:`~BuiltinAssertion.check`: the verdict on the finished trial, with the reason users read.
- :meth:`~BuiltinAssertion.label`: the grade's name, which records and re-grades compare.
- ``bounds_scope``, :meth:`~BuiltinAssertion.rows_concerned`, :meth:`~BuiltinAssertion.wrong_rows`: what
  failure attribution needs to know about a failed check (``attribution.py``); none by default.
- :meth:`~BuiltinAssertion.check_fixture`: what it names, checked against the fixture at load; the
  default checks a ``table`` (with ``where``, ``field``, ``column``) and every ``{sql: ...}`` value.

The defaults serve the common shape, a kind that names a ``table`` and a ``where`` (its label, the
rows attribution looks at, its fixture checks) or a workspace ``path``; a kind overrides what differs.

The class docstring and field docstrings are the kind's entry in docs/case-file.md.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.cases.assertions.fixture import Fixture
from passhat.errors import CaseError
from passhat.world.diff import Diff, RowChange

if TYPE_CHECKING:
    from passhat.graders.base import TrialView

Scalar = str | int | float | bool | None
Subject = Literal["state", "trajectory", "reply", "judge"]
"""Which grader owns an assertion: built-in kinds are ``state`` or ``reply``; a custom grader declares its own."""
GradedSubject = Literal["state", "trajectory", "reply"]
"""The subjects a built-in kind may have: those whose grader grades assertions synchronously (a kind owned
by ``judge`` would need the judge model, which a re-grade does not have)."""
GRADER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What a custom grader may be called (the key of its assertions in a case file)."""
RowTarget = tuple[str, dict[str, Any]]
"""A table and a ``where`` (``{}``: any row of it): rows a check is about."""


class SqlValue(BaseModel):
    """An expected value computed from the world, e.g. ``{sql: "SELECT amount FROM approvals WHERE ..."}``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    sql: str
    """A read-only query returning one row with one column; evaluated on the final state (with the
    step budget of ``sql`` assertions)."""


Expected = Annotated[Scalar | SqlValue, Field(union_mode="left_to_right")]


def expected_value(view: TrialView, value: Any) -> Any:
    """An ``Expected`` field's value on the final state: a literal as written, ``{sql: ...}`` the one value its
    query returns (``ValueError`` for any other shape of result)."""
    if not isinstance(value, SqlValue):
        return value
    rows = view.query(value.sql, ())
    if len(rows) != 1 or len(rows[0]) != 1:
        raise ValueError(f"expected-value query must return one value, got {rows!r}: {value.sql}")
    return rows[0][0]


def where_sql(where: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    """`` WHERE "a" = ? AND "b" IS ?`` and its parameters for column equality filters (``null`` matches null)."""
    if not where:
        return "", ()
    parts = [f'"{k}" IS ?' if v is None else f'"{k}" = ?' for k, v in where.items()]
    return " WHERE " + " AND ".join(parts), tuple(where.values())


def describe(table: str, where: dict[str, Any]) -> str:
    """``table where a=1 and b='x'`` (just ``table`` without filters), as labels and reasons name rows."""
    cond = " and ".join(f"{k}={v!r}" for k, v in where.items())
    return f"{table} where {cond}" if cond else table


class BuiltinAssertion(BaseModel):
    """A built-in assertion kind (the module docstring says what each declares)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    subject: ClassVar[GradedSubject]
    shorthand: ClassVar[str | None] = None
    needs_workspace: ClassVar[bool] = False
    bounds_scope: ClassVar[bool] = False
    """It checks the side-effect boundary: a failure is a change outside the allowed scope (attribution)."""

    description: str | None = None
    """Optional human wording of what the assertion checks, shown in reasons."""
    required: bool = True
    """Whether a failed check fails the trial (``false``: graded and recorded, but it does not decide the
    outcome; a τ²-bench import marks the checks its task's ``reward_basis`` leaves out so)."""
    kind: str
    # each kind narrows ``kind`` to its own Literal, with the kind's name as default: the name in case files

    @classmethod
    def kind_name(cls) -> str:
        """The kind's key in a case file (``row_count``)."""
        return str(cls.model_fields["kind"].default)

    @abstractmethod
    def check(self, view: TrialView) -> tuple[bool, str]:
        """``(passed, reason)`` on the finished trial: the reason is what users read (expected vs actual).
        An exception fails the grade closed, its message in the reason."""

    def label(self) -> str:
        """The grade's name: ``kind: description`` when the case words it, else ``kind(target)``."""
        if self.description:
            return f"{self.kind}: {self.description}"
        return f"{self.kind}({self.label_target()})"

    def label_target(self) -> str:
        """What an unworded label names the assertion by. The default: its ``table`` and ``where``
        (``tickets where invoice_id='INV-102'``), or nothing for a kind without a table."""
        rows = self._rows()
        return describe(*rows) if rows else ""

    def rows_concerned(self, diff: Diff) -> list[RowTarget]:
        """The rows a failed check is about: failure attribution names the call that wrote one of them (or
        should have) as the step that went wrong. The default: its ``table`` and ``where``, or none ("the
        check names no table")."""
        rows = self._rows()
        return [rows] if rows else []

    def _rows(self) -> RowTarget | None:
        """``(table, where)`` of a kind that names a table (``where`` is optional), else ``None``."""
        table = getattr(self, "table", None)
        return (table, dict(getattr(self, "where", {}))) if isinstance(table, str) else None

    def wrong_rows(self, changes: list[RowChange]) -> list[RowChange]:
        """Of the changed rows it is about, the ones the check finds wrong, when it can tell (attribution
        then names their writer); none by default, which leaves all of them."""
        return []

    def check_fixture(self, field: str, fixture: Fixture) -> None:
        """Raise :class:`~passhat.errors.CaseError` for what the assertion names that the fixture lacks.

        The default: a ``table`` exists, with the columns its ``where``, ``field`` and ``column`` name, and
        every ``{sql: ...}`` value is read-only and runs on the fixture. A kind naming more overrides it.
        """
        table = getattr(self, "table", None)
        if isinstance(table, str):
            t = fixture.table(table, f"{field}.table")
            fixture.columns(t, getattr(self, "where", {}), f"{field}.where")
            for attr in ("field", "column"):
                if hasattr(self, attr):
                    fixture.columns(t, [getattr(self, attr)], f"{field}.{attr}")
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SqlValue) and value.sql:  # an empty query fails its grade, as it always has
                fixture.sql(value.sql, f"{field}.{name}.sql")

    def check_workspace(self, field: str, file: str, has_workspace: bool) -> None:
        """A kind that ``needs_workspace`` is refused for a fixture without one, and the ``path`` it names
        (if it names one) must stay inside the workspace."""
        if not self.needs_workspace:
            return
        if not has_workspace:
            raise CaseError(file, field, f"{self.kind} checks a workspace, and the case's fixture has none "
                                         "(declare one with Domain(workspace=...), docs/workspace.md)")
        path = getattr(self, "path", None)
        if isinstance(path, str) and (path.startswith("/") or ".." in path.split("/") or "\0" in path):
            raise CaseError(file, f"{field}.path", f"{path!r} is not a path inside the workspace (relative, no `..`)")
