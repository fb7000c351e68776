"""What a gate decides: one outcome per rule, and the gate's outcome and exit code from them.

Three outcomes, as in statistics.md §4: PASS (the evidence clears the bar), FAIL (the evidence is
below it) and INCONCLUSIVE (the interval straddles the bar: add trials or cases). SKIPPED is not a
decision: a rule that needs a baseline when none was given; it never makes a gate pass on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from passhat.models.gate import GateOutcome, Outcome, RuleResult

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


def overall(results: Sequence[RuleResult]) -> GateOutcome:
    """FAIL if any rule fails; else INCONCLUSIVE if any is (or if no rule could be decided); else PASS."""
    outcomes = {r.outcome for r in results}
    if "FAIL" in outcomes:
        return "FAIL"
    if "INCONCLUSIVE" in outcomes or not outcomes - {"SKIPPED"}:
        return "INCONCLUSIVE"
    return "PASS"


__all__ = ["EXIT_BAD_INPUT", "EXIT_CODES", "GateOutcome", "Outcome", "RuleResult", "Verdict", "overall", "three_way"]
