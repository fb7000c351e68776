"""Assertions on the final state and the reply, as data.

In a case file each assertion is a single-key mapping, e.g. ``- row_count: {table: tickets, where:
{invoice_id: INV-102}, equals: 1}``. The key picks the model below; graders evaluate them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Scalar = str | int | float | bool | None


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    description: str | None = None
    """Optional human wording of what the assertion checks, shown in reasons."""


class SqlValue(BaseModel):
    """An expected value computed from the world, e.g. ``{sql: "SELECT amount FROM approvals WHERE ..."}``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    sql: str
    """A read-only query returning one row with one column; evaluated on the final state (with the
    step budget of ``sql`` assertions)."""


Expected = Annotated[Scalar | SqlValue, Field(union_mode="left_to_right")]


class RowCount(_Base):
    """Number of rows in ``table`` matching ``where`` equals ``equals``."""

    kind: Literal["row_count"] = "row_count"
    table: str
    """Table to check."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed. Numbers match by value (25 == 25.0)."""
    equals: int = Field(ge=0)
    """Expected number of rows."""


class FieldEquals(_Base):
    """Every row matching ``where`` (at least one must) has ``field`` equal to ``equals``."""

    kind: Literal["field_equals"] = "field_equals"
    table: str
    """Table to check."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""
    field: str
    """Column whose value is checked."""
    equals: Expected
    """Expected value: a literal or ``{sql: ...}`` evaluated on the final state."""


class SqlCheck(_Base):
    """A read-only query whose result must equal ``expect`` (a scalar, a row, or a list of rows)."""

    kind: Literal["sql"] = "sql"
    query: str
    """Read-only SQL (SELECT or WITH) run on the final state. A query gets 100 million SQLite steps
    (about a second): one that runs away on the fixture (a ``WITH RECURSIVE`` that never stops) is
    rejected when the suite loads, one that runs away on a final state fails its grade."""
    expect: Any
    """Expected result: a scalar for one value, a list for one row, a list of lists for several rows."""


class NetChange(_Base):
    """Sum of ``column`` over rows matching ``where`` changed by exactly ``equals`` (final − initial)."""

    kind: Literal["net_change"] = "net_change"
    table: str
    """Table to check."""
    column: str
    """Column used by the check (summed for ``net_change``, looked for in the reply for ``reply_mentions``)."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""
    equals: Expected
    """Expected value: a literal or ``{sql: ...}`` evaluated on the final state."""


class RowScope(BaseModel):
    """Rows of one table that may change: those matching ``where`` (before or after the change)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    table: str
    """Table to check."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""


class UnchangedExcept(_Base):
    """Nothing changed outside the allowed tables and rows: the side-effect boundary."""

    kind: Literal["unchanged_except"] = "unchanged_except"
    tables: list[str] = Field(default_factory=list)
    """Tables where any change is allowed."""
    rows: list[RowScope] = Field(default_factory=list)
    """Tables where only matching rows may change."""


class ReplyContains(_Base):
    """The agent's messages to the user contain ``text`` (case-insensitive unless ``case_sensitive``)."""

    kind: Literal["reply_contains"] = "reply_contains"
    text: str
    """Text to look for."""
    case_sensitive: bool = False
    """Match case exactly."""
    scope: Literal["any", "last"] = "any"
    """``any``: any agent message; ``last``: the final reply only."""


class ReplyNotContains(ReplyContains):
    """The agent's messages to the user do not contain ``text``."""

    kind: Literal["reply_not_contains"] = "reply_not_contains"  # type: ignore[assignment]


class ReplyMatches(_Base):
    """The agent's messages match the regular expression ``pattern``."""

    kind: Literal["reply_matches"] = "reply_matches"
    pattern: str
    """Python regular expression searched in each message."""
    scope: Literal["any", "last"] = "any"
    """``any``: any agent message; ``last``: the final reply only."""


class ReplyMentions(_Base):
    """The reply mentions the value of ``column`` of the row(s) matching ``where`` (e.g. a ticket id)."""

    kind: Literal["reply_mentions"] = "reply_mentions"
    table: str
    """Table to check."""
    column: str
    """Column used by the check (summed for ``net_change``, looked for in the reply for ``reply_mentions``)."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""
    scope: Literal["any", "last"] = "any"
    """``any``: any agent message; ``last``: the final reply only."""


Assertion = Annotated[
    RowCount | FieldEquals | SqlCheck | NetChange | UnchangedExcept | ReplyContains | ReplyNotContains
    | ReplyMatches | ReplyMentions,
    Field(discriminator="kind"),
]
ASSERTION_KINDS: dict[str, type[_Base]] = {
    m.model_fields["kind"].default: m
    for m in (RowCount, FieldEquals, SqlCheck, NetChange, UnchangedExcept, ReplyContains, ReplyNotContains,
              ReplyMatches, ReplyMentions)
}
SHORTHAND_FIELD = {"reply_contains": "text", "reply_not_contains": "text", "reply_matches": "pattern"}


def expand_assertion(item: Any) -> Any:
    """Turn the file form ``{row_count: {...}}`` into ``{kind: row_count, ...}`` for validation.

    ``reply_contains: "38.5"`` is shorthand for ``reply_contains: {text: "38.5"}``.
    """
    if isinstance(item, dict) and "kind" not in item and len(item) == 1:
        (kind, body), = item.items()
        if kind in SHORTHAND_FIELD and not isinstance(body, dict):
            body = {SHORTHAND_FIELD[kind]: body}
        if isinstance(body, dict):
            return {"kind": kind, **body}
    return item
