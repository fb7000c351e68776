"""State grader: what the agent actually did to the world, not what it said.

Each final-state assertion gives one grade with expected vs actual: the built-in kinds whose subject is
``state`` (their checks are in ``cases/assertions/``: rows, scope, expected state, workspace files and
commands) and the domain's custom ``state`` graders.
"""

from __future__ import annotations

from passhat.graders.base import Grade, TrialView
from passhat.graders.checks import grade_assertions


def grade_state(view: TrialView) -> list[Grade]:
    """One grade per final-state assertion (built-in and custom state graders alike)."""
    return grade_assertions(view, "state")
