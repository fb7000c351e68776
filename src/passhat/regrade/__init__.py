"""Re-grading stored runs with the current cases and graders, without re-running the agent."""

from passhat.regrade.record import regrade_record
from passhat.regrade.run import regrade_run, suite_for

__all__ = ["regrade_record", "regrade_run", "suite_for"]
