"""The side-effect boundary: nothing changed outside the tables, rows and files a case allows.

``unchanged_except`` reads only the trial's diffs (rows and files), so its cost grows with the number of
changes, not the size of the state. Row scopes that could never match a row are refused when the suite
loads (``scope_checks.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.cases.assertions.base import BuiltinAssertion, GradedSubject, Scalar
from passhat.cases.assertions.fixture import Fixture
from passhat.cases.assertions.rows import matches
from passhat.cases.assertions.scope_checks import check_scopes
from passhat.cases.globs import check_globs
from passhat.cases.globs import matches as glob_matches
from passhat.errors import CaseError
from passhat.world.diff import Diff, RowChange

if TYPE_CHECKING:
    from passhat.graders.base import TrialView


class RowScope(BaseModel):
    """Rows of one table that may change: those matching ``where`` (before or after the change).

    A scope that can name no row is refused when the suite loads: ``columns: []``, a ``where`` value no row
    can hold (``"4812"`` for an INTEGER column: SQLite stores the number 4812, and scopes compare values as
    stored; ``null`` for a NOT NULL column), or a scope limited to ``columns`` whose ``where`` matches no row
    of the fixture (it permits only updates, so no row can come to match it). A scope without ``columns``
    whose ``where`` matches no fixture row is fine: it permits the rows the agent inserts."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    table: str
    """Table to check."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""
    columns: list[str] | None = None
    """If set, matching rows may change only in these columns: an update touching another column, or an
    insert or delete of a matching row, is a change outside the scope. Without it, any change is allowed."""


def in_scope(ch: RowChange, scopes: list[RowScope]) -> bool:
    """The scopes matching the changed row allow the change: one without ``columns`` allows anything; otherwise
    the columns of all matching scopes together must cover the update (an insert or delete changes every
    column, so it is out of a column scope)."""
    matching = [s for s in scopes if matches(ch.before, s.where) or matches(ch.after, s.where)]
    if not matching or any(s.columns is None for s in matching):
        return bool(matching)
    allowed = {c for s in matching for c in s.columns or []}
    return ch.kind == "updated" and set(ch.changed_fields) <= allowed


class UnchangedExcept(BuiltinAssertion):
    """Nothing changed outside the allowed tables, rows and files: the side-effect boundary."""

    subject: ClassVar[GradedSubject] = "state"
    bounds_scope: ClassVar[bool] = True

    kind: Literal["unchanged_except"] = "unchanged_except"
    tables: list[str] = Field(default_factory=list)
    """Tables where any change is allowed."""
    rows: list[RowScope] = Field(default_factory=list)
    """Tables where only matching rows may change (optionally only in some ``columns``). A scope whose ``where``
    matches no row of the fixture permits the rows the agent inserts; one that can match no row at all
    (``columns: []``, a value no row can hold, a ``columns`` scope with no fixture row to update) is refused
    when the suite loads."""
    files: list[str] = Field(default_factory=list)
    """Workspace domains: paths (globs, see ``file_unchanged``) where files may be added, removed or
    modified. In a domain with a workspace, a file changed outside them fails the check — so without
    ``files`` no file may change at all. Caches (``__pycache__``, ``.pytest_cache``) never count."""

    @field_validator("files", mode="before")
    @classmethod
    def _file_globs(cls, value: Any) -> Any:
        return check_globs(value)

    def rows_outside(self, diff: Diff) -> list[RowChange]:
        """The row changes the scope does not allow, in the diff's order."""
        scopes: dict[str, list[RowScope]] = {}
        for s in self.rows:
            scopes.setdefault(s.table, []).append(s)
        return [ch for ch in diff.rows() if ch.table not in self.tables and not in_scope(ch, scopes.get(ch.table, []))]

    def check(self, view: TrialView) -> tuple[bool, str]:
        outside = [f"{ch.table} {ch.kind} {list(ch.key)} ({', '.join(ch.changed_fields)})"
                   for ch in self.rows_outside(view.diff)]
        if view.files is not None:
            outside += [f"{c.path} ({c.kind})" for c in view.files.changes if not glob_matches(c.path, self.files)]
        if outside:
            return False, f"{len(outside)} change(s) outside the allowed scope: " + "; ".join(outside[:5])
        inside = len(view.diff) + (len(view.files.changes) if view.files is not None else 0)
        return True, f"no change outside the allowed scope ({inside} change(s) inside)"

    def check_fixture(self, field: str, fixture: Fixture) -> None:
        for j, name in enumerate(self.tables):
            fixture.table(name, f"{field}.tables.{j}")
        for j, scope in enumerate(self.rows):
            t = fixture.table(scope.table, f"{field}.rows.{j}.table")
            fixture.columns(t, scope.where, f"{field}.rows.{j}.where")
            fixture.columns(t, scope.columns or [], f"{field}.rows.{j}.columns")
        if fixture.reader is not None:
            check_scopes(self, field, fixture.file, fixture.reader)

    def check_workspace(self, field: str, file: str, has_workspace: bool) -> None:
        if self.files and not has_workspace:
            raise CaseError(file, f"{field}.files", "`files` needs a fixture with a workspace (Domain(workspace=...))")


KINDS: tuple[type[BuiltinAssertion], ...] = (UnchangedExcept,)
"""This family's kinds, in the order the reference documents them."""
