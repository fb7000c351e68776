"""Reply grader: what the agent told the user (checked only where the user must be told something).

The built-in ``reply_*`` kinds check it (``cases/assertions/reply.py``), with the domain's custom
``reply`` graders.
"""

from __future__ import annotations

from passhat.graders.base import Grade, TrialView
from passhat.graders.checks import grade_assertions


def grade_reply(view: TrialView) -> list[Grade]:
    """One grade per reply assertion (built-in and custom reply graders alike)."""
    return grade_assertions(view, "reply")
