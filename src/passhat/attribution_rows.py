"""Which call wrote — or should have written — the rows a failed final-state check is about.

Used by ``attribution.py`` for ``wrong_final_state``, ``claimed_success_without_state`` and
``side_effect_outside_scope``.

A failed state check names a table and a ``where`` (``refunds.amount where order_id=4830: expected 40.0,
actual 95.0``; each kind says which in ``rows_concerned``). Every call records the rows it wrote
(``ToolCall.changed_rows``), so the rows of that table the trial changed and that match the ``where``
lead to the call that last wrote one of them: the step that went wrong. When no such row changed, the
row is missing (or was never updated), and the call that should have written it is, in order: a call
that wrote another row of the same table instead (the wrong order, the wrong invoice), else the last
write that did not complete; else there is none, and the evidence says why (no write at all, or writes
to other tables only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from passhat.cases import Case
from passhat.cases.assertions import BuiltinAssertion
from passhat.cases.assertions.base import RowTarget
from passhat.cases.assertions.scope import UnchangedExcept
from passhat.graders import Grade
from passhat.tools import ToolCall
from passhat.world.diff import Diff, RowChange, same_value


@dataclass(frozen=True)
class Culprit:
    """The step a state finding points at (``None`` when there is none) and the words that say why."""

    step: int | None
    why: str


def state_culprit(case: Case, grade: Grade, calls: Sequence[ToolCall], diff: Diff | None) -> Culprit:
    """The call behind a failed state grade: the last writer of a matching row, or the one that should have been."""
    if "custom_grader" in grade.details:
        step = grade.details.get("step")
        if isinstance(step, int) and not isinstance(step, bool):
            return Culprit(step, f"the grader names step {step}")
        return Culprit(None, "the custom grader names no step or rows")
    assertion = next((a for a in case.assertions if a.label() == grade.name), None)
    if diff is None:
        return Culprit(None, "the trial's row changes were not given, so no call can be named")
    if any(c.committed and c.changed_rows is None for c in calls):
        return Culprit(None, "the record does not say which call wrote which row (recorded before calls listed "
                             "their rows)")
    if not isinstance(assertion, BuiltinAssertion) or not (targets := assertion.rows_concerned(diff)):
        return Culprit(None, "the check names no table")
    rows = [ch for table, where in targets for ch in diff.rows(table) if _matches(ch, where)]
    rows = assertion.wrong_rows(rows) or rows
    if rows:
        return _last_writer(rows, calls)
    return _should_have_written(targets, calls)


def scope_culprit(case: Case, grade: Grade, calls: Sequence[ToolCall], diff: Diff | None) -> Culprit | None:
    """The first call that wrote a row outside an ``unchanged_except`` scope; ``None`` when the rows do not
    say (a file change, a record whose calls do not list their rows)."""
    a = next((a for a in case.assertions if a.label() == grade.name), None)
    if not isinstance(a, UnchangedExcept) or diff is None or any(c.committed and c.changed_rows is None for c in calls):
        return None
    writers = _writers(calls)
    found = [(c, ch) for ch in a.rows_outside(diff) for c in writers.get((ch.table, repr(list(ch.key))), [])]
    if not found:
        return None
    call, ch = min(found, key=lambda pair: pair[0].step)
    return Culprit(call.step, f"{call.tool} at step {call.step} was the first to write outside it ({ch.kind} {_row(ch)})")


def _matches(ch: RowChange, where: dict[str, Any]) -> bool:
    return any(row is not None and all(k in row and same_value(row[k], v) for k, v in where.items())
               for row in (ch.before, ch.after))


def _writers(calls: Sequence[ToolCall]) -> dict[tuple[str, str], list[ToolCall]]:
    out: dict[tuple[str, str], list[ToolCall]] = {}
    for c in calls:
        for table, key in c.changed_rows or []:
            out.setdefault((table, repr(list(key))), []).append(c)
    return out


def _last_writer(rows: list[RowChange], calls: Sequence[ToolCall]) -> Culprit:
    writers = _writers(calls)
    found = [(c, ch) for ch in rows for c in writers.get((ch.table, repr(list(ch.key))), [])]
    if not found:
        return Culprit(None, f"no tool call wrote {_row(rows[0])}")
    call, ch = max(found, key=lambda pair: pair[0].step)
    verb = {"inserted": "inserted", "deleted": "deleted", "updated": "last wrote"}[ch.kind]
    return Culprit(call.step, f"{call.tool} at step {call.step} {verb} {_row(ch)}")


def _should_have_written(targets: list[RowTarget], calls: Sequence[ToolCall]) -> Culprit:
    tables = {t for t, _ in targets}
    wanted = " or ".join(_describe(t, w) for t, w in targets[:3])
    instead = [c for c in calls if c.committed and any(t in tables for t, _ in c.changed_rows or [])]
    if instead:
        c = instead[-1]
        table, key = next((t, k) for t, k in reversed(c.changed_rows or []) if t in tables)
        return Culprit(c.step, f"no row {wanted} was written; {c.tool} at step {c.step} wrote {table} {list(key)} instead")
    failed = [c for c in calls if c.kind == "write" and not c.committed]
    if failed:
        c = failed[-1]
        return Culprit(c.step, f"no call wrote a row {wanted}; the last write tried, {c.tool} at step {c.step}, did not "
                               f"complete ({c.status}: {c.error or 'no answer'})")
    writes = [c for c in calls if c.committed and c.changed_rows]
    if not writes:
        return Culprit(None, f"no call wrote a row {wanted}: the agent made no write")
    others = ", ".join(f"{c.tool} at step {c.step}" for c in writes[:3])
    return Culprit(None, f"no call wrote a row {wanted}: the agent's writes ({others}) changed other tables")


def _describe(table: str, where: dict[str, Any]) -> str:
    cond = " and ".join(f"{k}={v!r}" for k, v in where.items())
    return f"of {table} where {cond}" if cond else f"of {table}"


def _row(ch: RowChange) -> str:
    return f"{ch.table} {list(ch.key)}"


__all__ = ["Culprit", "scope_culprit", "state_culprit"]
