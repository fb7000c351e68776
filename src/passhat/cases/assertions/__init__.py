"""Assertions on the final state and the reply, as data.

In a case file each assertion is a single-key mapping, e.g. ``- row_count: {table: tickets, where:
{invoice_id: INV-102}, equals: 1}``. The key picks a built-in kind, or names a grader the case's
domain registers (:class:`~passhat.cases.assertions.custom.CustomAssertion`); whether the domain has
it, and whether the parameters fit it, is checked when the suite loads.

A built-in kind is one class (``base.py`` says what it declares: the grader that owns it, its check
and message, its label, its checks against the fixture). Kinds come in families, a module each:
``rows`` (counts, values, queries, sums), ``scope`` (the side-effect boundary), ``expected`` (exact
state), ``reply``, ``commands`` and ``files`` (workspaces); ``registry.py`` derives everything that
lists kinds from them, and the validation union below is built from the registry. Adding a kind to a
family touches that family's module only (docs/design/031-assertion-kinds.md).
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Discriminator, Tag

from passhat.cases.assertions.base import (
    GRADER_NAME,
    BuiltinAssertion,
    Expected,
    GradedSubject,
    Scalar,
    SqlValue,
    Subject,
)
from passhat.cases.assertions.custom import CUSTOM, CustomAssertion
from passhat.cases.assertions.registry import (
    ASSERTION_KINDS,
    BUILTIN_ASSERTIONS,
    SHORTHAND_FIELD,
    WORKSPACE_ASSERTIONS,
)


def _tag(value: Any) -> str | None:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    if not isinstance(kind, str):
        return None
    return kind if kind in ASSERTION_KINDS else CUSTOM


def _union() -> Any:
    """Every built-in kind tagged by its name, then the custom assertion: pydantic picks one by ``_tag``."""
    tagged = [Annotated[model, Tag(name)] for name, model in ASSERTION_KINDS.items()]
    return Annotated[
        functools.reduce(operator.or_, [*tagged, Annotated[CustomAssertion, Tag(CUSTOM)]]),
        Discriminator(_tag, custom_error_type="invalid_assertion",
                      custom_error_message="an assertion is a single-key mapping, e.g. {row_count: {table: t, equals: 1}} "
                                           "or {my_grader: {param: value}}"),
    ]


if TYPE_CHECKING:  # what code sees of a case's assertion: a kind (narrowed with isinstance) or a grader's
    Assertion = BuiltinAssertion | CustomAssertion
else:
    Assertion = _union()


def expand_assertion(item: Any) -> Any:
    """Turn the file form ``{row_count: {...}}`` into ``{kind: row_count, ...}`` for validation.

    ``reply_contains: "38.5"`` is shorthand for ``reply_contains: {text: "38.5"}`` and ``expect_state:
    reference`` for ``expect_state: {reference: true}`` (each kind's ``shorthand``); a bare name (``-
    no_double_refund``, or ``no_double_refund:`` with nothing after it) is an assertion without parameters.
    """
    if isinstance(item, str):
        return {"kind": item}
    if isinstance(item, dict) and "kind" not in item and len(item) == 1:
        (kind, body), = item.items()
        if kind in SHORTHAND_FIELD and not isinstance(body, dict):
            body = {SHORTHAND_FIELD[kind]: body}
        if body is None:
            body = {}
        if isinstance(body, dict):
            return {"kind": kind, **body}
    return item


__all__ = [
    "ASSERTION_KINDS", "BUILTIN_ASSERTIONS", "CUSTOM", "GRADER_NAME", "SHORTHAND_FIELD", "WORKSPACE_ASSERTIONS",
    "Assertion", "BuiltinAssertion", "CustomAssertion", "Expected", "GradedSubject", "Scalar", "SqlValue", "Subject",
    "expand_assertion",
]
