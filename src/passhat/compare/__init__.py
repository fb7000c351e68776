"""Paired comparison of two runs of the same suite (``passhat compare``).

Imports results, stats and the run store only; nothing below it imports this package.
"""

from passhat.compare.comparison import (
    case_changes,
    compare_folders,
    compare_runs,
    comparison,
    fully_passes,
    write_comparison,
)
from passhat.compare.runs import CompareError, Excluded, LoadedRun, Matching, load_run, match_cases, require_trials

__all__ = [
    "CompareError",
    "Excluded",
    "LoadedRun",
    "Matching",
    "case_changes",
    "compare_folders",
    "compare_runs",
    "comparison",
    "fully_passes",
    "load_run",
    "match_cases",
    "require_trials",
    "write_comparison",
]
