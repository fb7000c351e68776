"""The case-file reference, generated from the models so documentation and validation cannot drift."""

from __future__ import annotations

from pydantic import BaseModel

from passhat.cases.assertions import BUILTIN_ASSERTIONS, CustomAssertion
from passhat.cases.model import Case, Limits, OrderConstraint, ReferenceCall, RequiredCall, Rules, UserSpec, UserTurn
from passhat.cases.rubric import Criterion, JudgeSpec
from passhat.docgen import field_table, nested_sections
from passhat.tools.faults import Fault

SECTIONS: list[tuple[str, type[BaseModel]]] = [
    ("Case", Case), ("user", UserSpec), ("user.turns[]", UserTurn), ("required_tools[]", RequiredCall),
    ("order[]", OrderConstraint), ("reference[]", ReferenceCall), ("faults[]", Fault), ("limits", Limits), ("rules", Rules),
    ("judge", JudgeSpec), ("judge.criteria[]", Criterion),
]
ASSERTIONS: list[type[BaseModel]] = list(BUILTIN_ASSERTIONS)
COLLAPSE = {"RowCount": "list[assertion]"}
"""The union of every assertion model is written ``list[assertion]``."""


def _table(model: type[BaseModel], skip: tuple[str, ...] = ()) -> list[str]:
    return field_table(model, skip=skip, collapse=COLLAPSE)


def _with_nested(title: str, model: type[BaseModel], level: str, seen: set[type[BaseModel]]) -> list[str]:
    """The sections of the models nested in its fields, the assertions excepted (they have their own)."""
    return nested_sections(title, model, level, seen, elsewhere=ASSERTIONS, collapse=COLLAPSE)


def case_file_reference() -> str:
    """Markdown reference of every case-file field, from the pydantic models and their docstrings."""
    out = ["# Case file reference", "", "Generated from `passhat.cases` by `passhat cases reference`; do not edit.", ""]
    seen: set[type[BaseModel]] = {m for _, m in SECTIONS} | {CustomAssertion}  # that one has its own section
    for title, model in SECTIONS:
        out += [f"## `{title}`", "", " ".join((model.__doc__ or "").split()), "", *_table(model), ""]
        out += _with_nested(title.removesuffix("[]"), model, "##", seen)
    out += ["## `assertions[]`", "",
            "Each assertion is a single-key mapping: `- row_count: {table: tickets, equals: 1}`. "
            "`reply_contains: \"text\"` is shorthand for `reply_contains: {text: \"text\"}`; "
            "`expect_state: reference` for `expect_state: {reference: true}`.", ""]
    for model in ASSERTIONS:
        kind = model.model_fields["kind"].default
        out += [f"### `{kind}`", "", " ".join((model.__doc__ or "").split()), "", *_table(model, ("kind",)), ""]
        out += _with_nested(kind, model, "####", seen)
    custom = CustomAssertion
    out += ["### any other name: a grader of the domain", "", " ".join((custom.__doc__ or "").split()), "",
            *_table(custom, ("kind",)),
            "| *the grader's parameters* | as declared | as declared | Each parameter of the grader's function, "
            "validated against its type hint. |", ""]
    return "\n".join(out).rstrip() + "\n"
