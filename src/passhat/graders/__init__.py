"""Graders: rules, final state, trajectory, reply. A trial passes only if every required grade passes."""

from passhat.graders.base import Grade, Grader, TrialView, trial_passed
from passhat.graders.reply import grade_reply
from passhat.graders.rules import grade_rules
from passhat.graders.state import grade_state
from passhat.graders.trajectory import grade_trajectory

DEFAULT_GRADERS: tuple[Grader, ...] = (grade_rules, grade_state, grade_trajectory, grade_reply)


def grade_all(view: TrialView, graders: tuple[Grader, ...] = DEFAULT_GRADERS) -> list[Grade]:
    """Run every grader; order is stable so records diff cleanly."""
    return [g for grader in graders for g in grader(view)]


__all__ = ["DEFAULT_GRADERS", "Grade", "Grader", "TrialView", "grade_all", "trial_passed"]
