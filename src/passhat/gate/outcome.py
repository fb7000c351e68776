"""What a gate decides: one outcome per rule, and the gate's outcome and exit code from them.

Three outcomes, as in statistics.md §4: PASS (the evidence clears the bar), FAIL (the evidence is
below it) and INCONCLUSIVE (the interval straddles the bar: add trials or cases). SKIPPED is not a
decision: a rule that needs a baseline when none was given; it never makes a gate pass on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["PASS", "FAIL", "INCONCLUSIVE", "SKIPPED"]
GateOutcome = Literal["PASS", "FAIL", "INCONCLUSIVE"]
EXIT_CODES: dict[str, int] = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}
"""Exit codes of ``passhat gate`` and ``passhat run --gate``; 2 is bad input."""
EXIT_BAD_INPUT = 2


@dataclass(frozen=True)
class Verdict:
    """A rule's decision and the numbers behind it."""

    outcome: Outcome
    reason: str
    value: float | None = None
    bar: float | None = None
    low: float | None = None
    high: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


def three_way(low: float, high: float, bar: float) -> Outcome:
    """PASS if the lower bound reaches the bar, FAIL if the upper bound is below it, else INCONCLUSIVE."""
    if low >= bar:
        return "PASS"
    if high < bar:
        return "FAIL"
    return "INCONCLUSIVE"


class RuleResult(BaseModel):
    """One rule's entry in ``gate.json``."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    name: str
    """The rule's label."""
    kind: str
    """The rule kind, e.g. ``pass_hat_k``."""
    outcome: Outcome
    """PASS, FAIL, INCONCLUSIVE, or SKIPPED (needs a baseline that was not given)."""
    reason: str
    """Why, in words: the numbers compared and what would change the outcome."""
    value: float | None = None
    """The observed value (estimate, percentile, count of new failures...)."""
    bar: float | None = None
    """The threshold it is compared with."""
    low: float | None = None
    """Lower bound used for the decision (one-sided 1 − α), when the rule is statistical."""
    high: float | None = None
    """Upper bound used for the decision (one-sided 1 − α), when the rule is statistical."""
    selection: str | None = None
    """The cases the rule looked at."""
    alpha: float | None = None
    """One-sided error rate of the decision, for statistical rules."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Per-case numbers, methods, excluded cases."""


def overall(results: Sequence[RuleResult]) -> GateOutcome:
    """FAIL if any rule fails; else INCONCLUSIVE if any is (or if no rule could be decided); else PASS."""
    outcomes = {r.outcome for r in results}
    if "FAIL" in outcomes:
        return "FAIL"
    if "INCONCLUSIVE" in outcomes or not outcomes - {"SKIPPED"}:
        return "INCONCLUSIVE"
    return "PASS"
