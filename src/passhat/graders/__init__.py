"""Graders: rules, final state, trajectory, reply. A trial passes only if every required grade passes.

A domain adds its own graders with :func:`grader` (see docs/graders.md); their assertions are graded by the
built-in grader of their kind, so they run wherever the built-in ones do (a run, a re-grade).
"""

from passhat.graders.base import Grade, Grader, TrialView, trial_passed
from passhat.graders.custom import TrialJudge, Verdict
from passhat.graders.declare import CustomGrader, GraderKind, grader
from passhat.graders.reply import grade_reply
from passhat.graders.rules import grade_rules
from passhat.graders.state import grade_state
from passhat.graders.trajectory import grade_trajectory

DEFAULT_GRADERS: tuple[Grader, ...] = (grade_rules, grade_state, grade_trajectory, grade_reply)
"""Every synchronous grader; the judge (``graders.judge.judge_trial``) is awaited after them."""


def grade_all(view: TrialView, graders: tuple[Grader, ...] = DEFAULT_GRADERS) -> list[Grade]:
    """Run every grader; order is stable so records diff cleanly."""
    return [g for each in graders for g in each(view)]


__all__ = [
    "DEFAULT_GRADERS", "CustomGrader", "Grade", "Grader", "GraderKind", "TrialJudge", "TrialView", "Verdict", "grade_all",
    "grader", "trial_passed",
]
