"""A notes suite with dev and holdout cases, written into a temporary folder per test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

NOTES = Path(__file__).parents[1] / "data" / "notes"
AGENTS = NOTES / "agents.py"


def notes_case(case_id: str, instruction: str, **extra: Any) -> dict[str, Any]:
    """A case the ``good`` notes agent passes (it adds 'call mom' with priority 2)."""
    return {
        "id": case_id, "domain": str(NOTES / "domain.py"), "instruction": instruction,
        "user": {"identity": "alice"}, "required_tools": ["add_note"],
        "assertions": [{"row_count": {"table": "notes", "where": {"owner": "alice", "title": "call mom"}, "equals": 1}},
                       {"unchanged_except": {"tables": ["notes"]}}],
        **extra,
    }


def write_cases(folder: Path, *cases: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for c in cases:
        (folder / f"{c['id']}.yaml").write_text(yaml.safe_dump(c, sort_keys=False, allow_unicode=True), "utf-8")
    return folder


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
