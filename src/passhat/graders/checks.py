"""From assertions to grades: every assertion is graded exactly once, by the grader its subject names.

A built-in kind's subject is declared on its class (``state`` or ``reply``), with its check and label
(``cases/assertions/``); a custom assertion's is the kind of the grader the domain registers under its
name. Each grader takes every assertion with its subject, in case order. An assertion naming a grader
the domain lacks falls to the state grader (the one that owns a case's acceptance) and fails there.
``judge`` assertions are graded by ``judge_trial``, which the runner awaits.
"""

from __future__ import annotations

from passhat.cases.assertions import Assertion, CustomAssertion, Subject
from passhat.graders.base import Grade, GraderName, TrialView
from passhat.graders.custom import run_grader, unknown_grader


def subject_of(view: TrialView, a: Assertion) -> Subject:
    """Which grader owns ``a``."""
    if isinstance(a, CustomAssertion):
        g = view.graders.get(a.kind)
        return "state" if g is None else g.kind
    return a.subject


def grade_assertions(view: TrialView, subject: GraderName) -> list[Grade]:
    """One grade per assertion owned by ``subject``; one that cannot be evaluated fails closed."""
    grades = []
    for a in view.case.assertions:
        if subject_of(view, a) != subject:
            continue
        if isinstance(a, CustomAssertion):
            g = view.graders.get(a.kind)
            grades.append(unknown_grader(view, a) if g is None else run_grader(view, a, g))
            continue
        try:
            passed, reason = a.check(view)
        except Exception as exc:  # fail closed: an unevaluable assertion never passes
            passed, reason = False, f"could not evaluate: {type(exc).__name__}: {exc}"
        grades.append(Grade(grader=subject, name=a.label(), passed=passed, reason=reason, required=a.required))
    return grades
