"""Case files and suites."""

from passhat.cases.model import Case, Limits, OrderConstraint, RequiredCall, Rules, Split, UserSpec, UserTurn
from passhat.cases.suite import Suite, load_suite

__all__ = [
    "Case", "Limits", "OrderConstraint", "RequiredCall", "Rules", "Split", "Suite", "UserSpec", "UserTurn",
    "load_suite",
]
