"""From assertions to grades: every assertion is graded exactly once, by the grader its subject names.

A built-in kind's subject is declared on its model (``state`` or ``reply``); a custom assertion's is the
kind of the grader the domain registers under its name. Each grader takes every assertion with its
subject, in case order, and one it has no check for fails closed instead of being skipped. An assertion
naming a grader the domain lacks falls to the state grader (the one that owns a case's acceptance) and
fails there. ``judge`` assertions are graded by ``judge_trial``, which the runner awaits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from passhat.cases.assertions import CustomAssertion, Subject
from passhat.graders.base import Grade, GraderName, TrialView
from passhat.graders.custom import run_grader, unknown_grader

Check = Callable[[TrialView, Any], tuple[bool, str]]


def where_sql(where: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    if not where:
        return "", ()
    parts = [f'"{k}" IS ?' if v is None else f'"{k}" = ?' for k, v in where.items()]
    return " WHERE " + " AND ".join(parts), tuple(where.values())


def describe(table: str, where: dict[str, Any]) -> str:
    cond = " and ".join(f"{k}={v!r}" for k, v in where.items())
    return f"{table} where {cond}" if cond else table


def assertion_name(a: Any) -> str:
    """A short label for a built-in assertion, used as the grade name."""
    if a.description:
        return f"{a.kind}: {a.description}"
    target = getattr(a, "table", None) or getattr(a, "text", None) or getattr(a, "pattern", None) or ""
    if getattr(a, "reference", None) is True:  # expect_state: reference
        target = "reference"
    where = getattr(a, "where", None)
    return f"{a.kind}({describe(target, where) if where else target})"


def subject_of(view: TrialView, a: Any) -> Subject:
    """Which grader owns ``a``."""
    if isinstance(a, CustomAssertion):
        g = view.graders.get(a.kind)
        return "state" if g is None else g.kind
    return a.subject  # type: ignore[no-any-return]


def grade_assertions(view: TrialView, subject: GraderName, checks: dict[str, Check]) -> list[Grade]:
    """One grade per assertion owned by ``subject``; one that cannot be evaluated fails closed."""
    grades = []
    for a in view.case.assertions:
        if subject_of(view, a) != subject:
            continue
        if isinstance(a, CustomAssertion):
            g = view.graders.get(a.kind)
            grades.append(unknown_grader(view, a) if g is None else run_grader(view, a, g))
            continue
        check = checks.get(a.kind)
        if check is None:
            passed, reason = False, f"the {subject} grader has no check for assertion kind {a.kind!r}"
        else:
            try:
                passed, reason = check(view, a)
            except Exception as exc:  # fail closed: an unevaluable assertion never passes
                passed, reason = False, f"could not evaluate: {type(exc).__name__}: {exc}"
        grades.append(Grade(grader=subject, name=assertion_name(a), passed=passed, reason=reason, required=a.required))
    return grades
