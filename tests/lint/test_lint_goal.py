"""Lint compares what users want: the hidden goal when a case has one, not a generic opener."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from passhat.lint import lint_suite

NOTES = Path(__file__).parents[1] / "data" / "notes"
STATE = [{"row_count": {"table": "notes", "where": {"title": "call mom"}, "equals": 1}}]


def write(folder: Path, case_id: str, split: str, *, instruction: str | None = None, goal: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"id": case_id, "domain": str(NOTES / "domain.py"), "user": {"identity": "alice"},
                            "assertions": STATE, "split": split}
    if instruction is not None:
        data["instruction"] = instruction
    if goal is not None:
        data["user"]["goal"] = goal
    (folder / f"{case_id}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def near(folder: Path) -> list[tuple[str, str]]:
    return [(f.case_id or "", f.field) for f in lint_suite(str(folder)).findings if f.code == "near-duplicate"]


def test_the_same_generic_opener_with_different_goals_is_not_a_duplicate(tmp_path: Path) -> None:
    write(tmp_path, "a-milk", "dev", goal="Add a note titled 'buy milk' with priority 3.")
    write(tmp_path, "dentist", "holdout", goal="Delete my note about the dentist; I cancelled it.")
    assert near(tmp_path) == []


def test_the_same_goal_behind_different_openers_is_a_duplicate(tmp_path: Path) -> None:
    write(tmp_path, "a-milk", "dev", instruction="Hi there!", goal="Add a note titled 'buy milk' with priority 3.")
    write(tmp_path, "b-milk-again", "holdout", instruction="Good morning, I have a request about my notes.",
          goal="Please add a note titled 'buy milk' with priority 3!")
    assert near(tmp_path) == [("b-milk-again", "user.goal")]


def test_a_goal_that_rewrites_another_cases_instruction_is_a_duplicate(tmp_path: Path) -> None:
    write(tmp_path, "a-milk", "dev", instruction="Add a note titled 'buy milk' with priority 3.")
    write(tmp_path, "b-milk-hidden", "holdout", goal="Add a note titled 'buy milk' with priority 3, please.")
    (finding,) = [f for f in lint_suite(str(tmp_path)).findings if f.code == "near-duplicate"]
    assert finding.case_id == "b-milk-hidden" and finding.field == "user.goal" and "(its instruction)" in finding.message
