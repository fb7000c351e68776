"""Notes-domain cases the suite tests write (imported as ``tests.suites.helpers``; fixtures stay in conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
