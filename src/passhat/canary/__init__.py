"""Canary analysis: production outcome records of a candidate version compared with a baseline's.

``records`` loads the JSONL files (a malformed line is a :class:`~passhat.errors.PasshatError` naming
file:line and the field); ``compare`` holds the statistics and the PASS/FAIL/INCONCLUSIVE decision.
See docs/canary.md.
"""

from passhat.canary.compare import (
    CanaryResult,
    Decision,
    MetricDifference,
    RateDifference,
    SegmentComparison,
    compare_canary,
    decide,
    newcombe_difference,
)
from passhat.canary.records import OUTCOMES, Outcome, OutcomeRecord, load_records, parse_records

__all__ = [
    "OUTCOMES",
    "CanaryResult",
    "Decision",
    "MetricDifference",
    "Outcome",
    "OutcomeRecord",
    "RateDifference",
    "SegmentComparison",
    "compare_canary",
    "decide",
    "load_records",
    "newcombe_difference",
    "parse_records",
]
