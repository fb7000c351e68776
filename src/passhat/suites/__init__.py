"""Suites as versioned datasets: selecting cases, content hashes, frozen snapshots and what changed.

Imports ``cases`` and ``domain`` only; the runner, results, compare and gate may import this package.
"""

from passhat.suites.changes import changed_cases
from passhat.suites.select import CaseFilter, SelectionError, parse_tag_filters, select_cases, subset
from passhat.suites.snapshot import SuiteChanged, fixture_hashes, freeze, load_snapshot, verify_snapshot, write_snapshot

__all__ = [
    "CaseFilter", "SelectionError", "SuiteChanged", "changed_cases", "fixture_hashes", "freeze", "load_snapshot",
    "parse_tag_filters", "select_cases", "subset", "verify_snapshot", "write_snapshot",
]
