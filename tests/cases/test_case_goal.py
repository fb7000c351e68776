"""A case may keep what the user wants (``user.goal``) apart from what the agent is told first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from passhat.cases import Case, load_suite
from passhat.cases.model import DEFAULT_OPENER
from passhat.errors import CaseError

NOTES = Path(__file__).parents[1] / "data" / "notes"
GOOD = (NOTES / "cases" / "add-note.yaml").read_text()
INSTRUCTION = "instruction: \"Add a note titled 'call mom' with priority 2.\"\n"
GOAL_ONLY = GOOD.replace(INSTRUCTION, "").replace("user: {identity: alice,", 'user: {identity: alice, goal: "A note: call mom",')


def suite_with(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    shutil.copy(NOTES / "domain.py", tmp_path / "domain.py")
    shutil.copy(NOTES / "fixture.yaml", tmp_path / "fixture.yaml")
    (folder / "bad.yaml").write_text(text)
    return folder


def test_with_a_goal_the_instruction_may_be_left_out_and_the_user_opens_generically(tmp_path: Path) -> None:
    assert INSTRUCTION in GOOD and "goal:" in GOAL_ONLY
    case = load_suite(str(suite_with(tmp_path, GOAL_ONLY))).cases[0]
    assert case.instruction == DEFAULT_OPENER == "Hi, I need some help." and case.user.goal == "A note: call mom"
    assert "instruction" not in Case.model_json_schema()["required"]  # editors accept a goal-only case


@pytest.mark.parametrize(("text", "field", "words"), [
    (GOOD.replace(INSTRUCTION, ""), "instruction", "only when user.goal is given"),
    (GOAL_ONLY.replace('goal: "A note: call mom"', 'goal: ""'), "user.goal", "at least 1 character"),
    (GOOD.replace('- reply_contains: "added"', "- reply_contains: {text: added, normalize: [digits]}"),
     "assertions.3.reply_contains.normalize.0", "'numbers', 'whitespace' or 'unicode'"),
    (GOOD.replace('- reply_contains: "added"', "- reply_not_contains: {text: added, normalize: whitspace}"),
     "assertions.3.reply_not_contains.normalize.0", "'numbers', 'whitespace' or 'unicode'"),
])
def test_a_bad_goal_or_normalisation_names_file_and_field(tmp_path: Path, text: str, field: str, words: str) -> None:
    with pytest.raises(CaseError) as info:
        load_suite(str(suite_with(tmp_path, text)))
    assert info.value.file.endswith("bad.yaml") and info.value.field == field and words in str(info.value)


def base(**user: object) -> dict[str, object]:
    return {"id": "h", "domain": "refunds", "instruction": "Refund order 7.", "user": {"facts": {"order_id": "7"}, **user},
            "assertions": [{"reply_contains": "refunded"}, {"reply_not_contains": {"text": "x", "scope": "last"}}]}


def test_the_goal_and_normalisation_are_part_of_the_content_hash() -> None:
    plain = Case.model_validate(base()).content_hash()
    # computed before user.goal and normalize existed: cases that use neither still compare with old runs
    assert plain == "edb2a1a34f14c55a98cec76ba4c3768e3e20c49a78610bfb995eae49a4e007d1"
    one, other = (Case.model_validate(base(goal=g)).content_hash() for g in ("Refund order 7", "Refund order 8"))
    assert len({plain, one, other}) == 3
    normalised = base()
    normalised["assertions"] = [{"reply_contains": {"text": "refunded", "normalize": ["numbers"]}},
                                {"reply_not_contains": {"text": "x", "scope": "last"}}]
    assert Case.model_validate(normalised).content_hash() != plain
