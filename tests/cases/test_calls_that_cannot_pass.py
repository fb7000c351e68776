"""Required calls and ordering rules no trial could satisfy or exercise are bad input before any trial.

Each of these used to load and run: a required call on a parameter the tool does not take (or a value its
schema refuses) failed every trial of every agent with "never succeeded", and a required tool the case
forbids did the same although `passhat cases lint` called it a contradiction; an ordering rule on a
refused tool passed or failed without ever checking an order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from passhat.cases import load_suite
from passhat.errors import CaseError
from passhat.lint import lint_suite
from tests.cases.notes_suite import GOOD
from tests.cases.notes_suite import notes_suite as one_case


def notes_suite(tmp_path: Path, required: str, extra: str = "") -> Path:
    """The notes test domain's add-note case with its ``required_tools`` line replaced, and more lines."""
    return one_case(tmp_path, GOOD.replace("required_tools: [add_note]\n", required + "\n" + extra))


REFUSED = [
    ("required_tools: [{tool: add_note, args: {titel: call mom}}]", "", "required_tools.0.args.titel", "cannot-fire",
     "add_note takes no parameter 'titel' (did you mean 'title'?), so no call of it can have it; its parameters: "
     "body, priority, title"),
    ("required_tools: [{tool: list_notes, args: {owner: alice}}]", "", "required_tools.0.args.owner", "cannot-fire",
     "list_notes takes no parameter 'owner'"),
    ("required_tools: [{tool: add_note, args: {priority: '2'}}]", "", "required_tools.0.args.priority", "cannot-fire",
     "'2' is not a value add_note's parameter 'priority' accepts (integer)"),
    ("required_tools: [{tool: get_note, args: {note_id: 1}}]", "", "required_tools.0.args.note_id", "cannot-fire",
     "1 is not a value get_note's parameter 'note_id' accepts (string)"),
    ("required_tools: [add_note]", "forbidden_tools: [add_note]\n", "required_tools.0.tool", "contradiction",
     "'add_note' is required but forbidden in this case: the case can never pass"),
    ("required_tools: [add_note]", "allowed_tools: [list_notes]\n", "required_tools.0.tool", "contradiction",
     "'add_note' is required but not in allowed_tools"),
    ("required_tools: [add_note]", "forbidden_tools: [wipe_audit]\norder: [{first: list_notes, then: wipe_audit}]\n",
     "order.0.then", "cannot-fire", "wipe_audit is forbidden in this case, so no call of it can succeed"),
    ("required_tools: [add_note]", "allowed_tools: [add_note]\norder: [{first: list_notes, then: add_note}]\n",
     "order.0.first", "cannot-fire", "list_notes is not in allowed_tools in this case, so it can never come first"),
]


@pytest.mark.parametrize(("required", "extra", "field", "code", "words"), REFUSED)
def test_required_calls_and_orders_that_cannot_act_are_refused(tmp_path: Path, required: str, extra: str,
                                                               field: str, code: str, words: str) -> None:
    folder = notes_suite(tmp_path, required, extra)
    with pytest.raises(CaseError) as info:
        load_suite(str(folder))
    assert info.value.file.endswith("case.yaml")
    assert (info.value.field, words in info.value.message) == (field, True), info.value.message
    assert [(f.code, f.field) for f in lint_suite(str(folder)).errors] == [(code, field)]


@pytest.mark.parametrize("required", [
    "required_tools: [{tool: add_note, args: {title: call mom, priority: 2.0}}]",  # numbers by value
    "required_tools: [{tool: add_note, args: {priority: true}}]",  # booleans are 1/0, as the grader compares
    "required_tools: [{tool: get_note, args: {note_id: N-1}}]",
])
def test_required_calls_a_valid_call_can_make_load(tmp_path: Path, required: str) -> None:
    folder = notes_suite(tmp_path, required)
    assert [c.id for c in load_suite(str(folder)).cases] == ["add-note"]
    assert lint_suite(str(folder)).errors == []
