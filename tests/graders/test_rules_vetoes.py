"""The loop and unknown-tool vetoes fail a trial by default; a case's ``rules`` can turn each into a record."""

from __future__ import annotations

import pytest

from passhat.cases.model import Rules


def test_the_vetoes_are_on_by_default() -> None:
    rules = Rules()
    assert rules.loops_fail and rules.unknown_tools_fail


@pytest.mark.parametrize("field", ["loops_fail", "unknown_tools_fail"])
def test_each_veto_can_be_switched_off(field: str) -> None:
    assert getattr(Rules.model_validate({field: False}), field) is False


@pytest.mark.parametrize("field", ["loops_fail", "unknown_tools_fail"])
def test_a_switched_off_veto_is_part_of_the_case_hash(field: str) -> None:
    """Runs before the switches existed keep their case hashes (resume, regrade); switching one off is a change."""
    from passhat.cases.model import Case

    case = {"id": "x", "domain": "d", "instruction": "i", "assertions": [{"unchanged_except": {}}]}
    on = Case.model_validate({**case, "rules": {field: True}}).content_hash()
    assert on == Case.model_validate(case).content_hash()
    assert Case.model_validate({**case, "rules": {field: False}}).content_hash() != on
