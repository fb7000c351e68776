"""The case-file reference in docs/ is generated from the models and must match them."""

from pathlib import Path

from passhat.cases.reference import case_file_reference

DOC = Path(__file__).parents[2] / "docs" / "case-file.md"


def test_case_file_reference_is_up_to_date() -> None:
    assert DOC.read_text("utf-8") == case_file_reference(), "run: passhat cases reference > docs/case-file.md"


def test_every_field_is_documented() -> None:
    text = case_file_reference()
    undocumented = [line for line in text.splitlines() if line.startswith("| `") and line.endswith("|  |")]
    assert undocumented == []
