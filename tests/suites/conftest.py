"""A notes suite with dev and holdout cases, written into a temporary folder per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.suites.helpers import notes_case, write_cases


@pytest.fixture
def split_suite(tmp_path: Path) -> Path:
    """dev: add-dev (normal), fault-dev (fault); holdout: add-holdout (normal), fault-holdout (fault)."""
    return write_cases(
        tmp_path / "splits",
        notes_case("add-dev", "Add a note titled 'call mom' with priority 2.", tags={"scenario": "normal"}),
        notes_case("fault-dev", "Please make me a reminder note: call mom, medium priority.",
                   tags={"scenario": "fault", "risk": "high"},
                   faults=[{"tool": "list_notes", "kind": "latency", "seconds": 0.01}]),
        notes_case("add-holdout", "I need a note so I don't forget to phone my mother (priority two).",
                   split="holdout", tags={"scenario": "normal"}),
        notes_case("fault-holdout", "Create a priority-2 note called 'call mom' even if the list is slow.",
                   split="holdout", tags={"scenario": "fault", "risk": "low"},
                   faults=[{"tool": "list_notes", "kind": "latency", "seconds": 0.01}]),
    )
