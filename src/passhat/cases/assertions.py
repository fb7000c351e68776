"""Assertions on the final state and the reply, as data.

In a case file each assertion is a single-key mapping, e.g. ``- row_count: {table: tickets, where:
{invoice_id: INV-102}, equals: 1}``. The key picks the model below; graders evaluate them. A key that
is not a built-in kind names a grader the case's domain registers (:class:`CustomAssertion`); whether
the domain has it, and whether the parameters fit it, is checked when the suite loads.

Every built-in kind says which grader owns it (``subject``): the state grader or the reply grader.
Each grader grades every assertion with its subject, so no assertion can go ungraded (a test checks
that each kind has a check).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from passhat.cases.globs import check_globs

Scalar = str | int | float | bool | None
Subject = Literal["state", "trajectory", "reply", "judge"]
"""Which grader owns an assertion: built-in kinds are ``state`` or ``reply``; a custom grader declares its own."""
GRADER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What a custom grader may be called (the key of its assertions in a case file)."""


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    subject: ClassVar[Subject]

    description: str | None = None
    """Optional human wording of what the assertion checks, shown in reasons."""
    required: bool = True
    """Whether a failed check fails the trial (``false``: graded and recorded, but it does not decide the
    outcome; a τ²-bench import marks the checks its task's ``reward_basis`` leaves out so)."""


class SqlValue(BaseModel):
    """An expected value computed from the world, e.g. ``{sql: "SELECT amount FROM approvals WHERE ..."}``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    sql: str
    """A read-only query returning one row with one column; evaluated on the final state (with the
    step budget of ``sql`` assertions)."""


Expected = Annotated[Scalar | SqlValue, Field(union_mode="left_to_right")]


class RowCount(_Base):
    """Number of rows in ``table`` matching ``where`` equals ``equals``."""

    subject: ClassVar[Subject] = "state"

    kind: Literal["row_count"] = "row_count"
    table: str
    """Table to check."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed. Numbers match by value (25 == 25.0)."""
    equals: int = Field(ge=0)
    """Expected number of rows."""


class FieldEquals(_Base):
    """Every row matching ``where`` (at least one must) has ``field`` equal to ``equals``."""

    subject: ClassVar[Subject] = "state"

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

    subject: ClassVar[Subject] = "state"

    kind: Literal["sql"] = "sql"
    query: str
    """Read-only SQL (SELECT or WITH) run on the final state. A query gets 100 million SQLite steps
    (about a second): one that runs away on the fixture (a ``WITH RECURSIVE`` that never stops) is
    rejected when the suite loads, one that runs away on a final state fails its grade."""
    expect: Any
    """Expected result: a scalar for one value, a list for one row, a list of lists for several rows."""


class NetChange(_Base):
    """Sum of ``column`` over rows matching ``where`` changed by exactly ``equals`` (final − initial)."""

    subject: ClassVar[Subject] = "state"

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
    """Rows of one table that may change: those matching ``where`` (before or after the change).

    A scope that can name no row is refused when the suite loads: ``columns: []``, a ``where`` value no row
    can hold (``"4812"`` for an INTEGER column: SQLite stores the number 4812, and scopes compare values as
    stored; ``null`` for a NOT NULL column), or a scope limited to ``columns`` whose ``where`` matches no row
    of the fixture (it permits only updates, so no row can come to match it). A scope without ``columns``
    whose ``where`` matches no fixture row is fine: it permits the rows the agent inserts."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    table: str
    """Table to check."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""
    columns: list[str] | None = None
    """If set, matching rows may change only in these columns: an update touching another column, or an
    insert or delete of a matching row, is a change outside the scope. Without it, any change is allowed."""


class UnchangedExcept(_Base):
    """Nothing changed outside the allowed tables, rows and files: the side-effect boundary."""

    subject: ClassVar[Subject] = "state"

    kind: Literal["unchanged_except"] = "unchanged_except"
    tables: list[str] = Field(default_factory=list)
    """Tables where any change is allowed."""
    rows: list[RowScope] = Field(default_factory=list)
    """Tables where only matching rows may change (optionally only in some ``columns``). A scope whose ``where``
    matches no row of the fixture permits the rows the agent inserts; one that can match no row at all
    (``columns: []``, a value no row can hold, a ``columns`` scope with no fixture row to update) is refused
    when the suite loads."""
    files: list[str] = Field(default_factory=list)
    """Workspace domains: paths (globs, see ``file_unchanged``) where files may be added, removed or
    modified. In a domain with a workspace, a file changed outside them fails the check — so without
    ``files`` no file may change at all. Caches (``__pycache__``, ``.pytest_cache``) never count."""

    @field_validator("files", mode="before")
    @classmethod
    def _file_globs(cls, value: Any) -> Any:
        return check_globs(value)


class CommandSucceeds(_Base):
    """A command run in the final workspace exits with ``exit_code`` (default 0) within ``timeout``, e.g.
    ``- command_succeeds: {run: "python -m pytest -q"}``. It runs in the same sandbox as the agent's
    ``run_command`` (no network, scrubbed environment) on the trial's copy, after the agent has finished;
    what it writes is not part of the trial's file changes."""

    subject: ClassVar[Subject] = "state"

    kind: Literal["command_succeeds"] = "command_succeeds"
    run: str = Field(min_length=1)
    """The command line, run by /bin/sh in the workspace root."""
    timeout: float = Field(300.0, gt=0, le=3600)
    """Seconds before the command is killed (a killed command fails the check)."""
    exit_code: int = 0
    """The exit status that passes."""


class FileUnchanged(_Base):
    """Files matching ``paths`` are exactly as in the fixture: none modified, removed, or added under them.

    A glob's ``*`` stays within one path segment, ``**`` spans any number of them, ``?`` is one
    character; a pattern also covers everything under a directory it matches (``tests`` is ``tests/**``).
    Paths are relative to the workspace root with ``/``.
    """

    subject: ClassVar[Subject] = "state"

    kind: Literal["file_unchanged"] = "file_unchanged"
    paths: list[str] = Field(min_length=1)
    """Globs of the protected files, e.g. ``[tests, LICENSE, "src/pkg/_generated*.py"]``."""

    @model_validator(mode="before")
    @classmethod
    def _one_path(cls, data: Any) -> Any:
        if isinstance(data, dict) and "path" in data and "paths" not in data:
            data = {**data, "paths": data["path"]}
            del data["path"]
        return data

    @field_validator("paths", mode="before")
    @classmethod
    def _path_globs(cls, value: Any) -> Any:
        return check_globs(value)


class FileExists(_Base):
    """The file ``path`` exists in the final workspace."""

    subject: ClassVar[Subject] = "state"

    kind: Literal["file_exists"] = "file_exists"
    path: str = Field(min_length=1)
    """The file's path relative to the workspace root."""


class FileAbsent(_Base):
    """Nothing exists at ``path`` in the final workspace: no file or link there, and no file under it (a
    directory holding no file is absent: directories are not part of a tree, as in the file diff)."""

    subject: ClassVar[Subject] = "state"

    kind: Literal["file_absent"] = "file_absent"
    path: str = Field(min_length=1)
    """The path relative to the workspace root."""


class FileMatches(_Base):
    """The text file ``path`` exists and the regular expression ``pattern`` is found in it."""

    subject: ClassVar[Subject] = "state"

    kind: Literal["file_matches"] = "file_matches"
    path: str = Field(min_length=1)
    """The file's path relative to the workspace root."""
    pattern: str
    """Python regular expression searched in the file (``(?m)`` for line anchors)."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"pattern {value!r} is not a regular expression: {exc}") from None
        return value


class ExpectState(_Base):
    """The final state holds exactly these rows, or equals the state the case's ``reference`` calls produce.

    Rows form: ``- expect_state: {table: orders, rows: [{id: 4812, status: refunded}], absent: [{id: 9}]}``.
    Each row in ``rows`` must exist, found by its ``key`` columns (one row per key), with exactly the
    listed values (numbers by value; unlisted columns are not checked); no row may match an entry of
    ``absent``. Reference form: ``- expect_state: reference`` (or ``{reference: true, ignore: {table:
    [column]}}``): the trial's row changes must equal those the case's ``reference`` calls make on the
    same fixture — the same rows inserted, updated and deleted with the same values, and nothing else.
    Rows are matched by primary key; inserted rows whose keys were generated (and so differ) are matched
    by their other columns. Timestamps depend on how many calls were made: list them in ``ignore``.
    """

    subject: ClassVar[Subject] = "state"

    kind: Literal["expect_state"] = "expect_state"
    table: str | None = None
    """Rows form: the table the rows belong to."""
    rows: list[dict[str, Scalar]] = Field(default_factory=list)
    """Rows form: rows that must exist, each with every key column and the values expected."""
    key: list[str] | None = None
    """Rows form: the columns that find a row (default: the table's primary key)."""
    absent: list[dict[str, Scalar]] = Field(default_factory=list)
    """Rows form: rows that must not exist; an entry matches a row equal on every column it lists."""
    reference: bool = False
    """Reference form: the final state must equal the one the case's ``reference`` calls produce."""
    ignore: dict[str, list[str]] = Field(default_factory=dict)
    """Reference form: columns, by table, whose values may differ from the reference's (e.g. timestamps)."""

    @field_validator("reference", mode="before")
    @classmethod
    def _reference_word(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value != "reference":
                raise ValueError(f"expect_state: {value!r} is not a form; the only word form is `expect_state: reference`, "
                                 "otherwise give {table: ..., rows: [...]} or {reference: true}")
            return True
        return value

    @model_validator(mode="after")
    def _one_form(self) -> ExpectState:
        rows_form = self.table is not None or self.rows or self.absent or self.key is not None
        if self.reference and rows_form:
            raise ValueError("expect_state has two forms: {reference: true, ignore: ...} or {table: ..., rows: [...], "
                             "absent: [...], key: [...]}, not both")
        if not self.reference and self.table is None:
            raise ValueError("expect_state needs `table` with `rows` and/or `absent`, or is `expect_state: reference`")
        if not self.reference and not (self.rows or self.absent):
            raise ValueError("expect_state needs at least one row in `rows` or `absent`")
        if self.ignore and not self.reference:
            raise ValueError("`ignore` belongs to the reference form (`{reference: true, ignore: {table: [column]}}`)")
        return self


class ReplyContains(_Base):
    """The agent's messages to the user contain ``text`` (case-insensitive unless ``case_sensitive``)."""

    subject: ClassVar[Subject] = "reply"

    kind: Literal["reply_contains"] = "reply_contains"
    text: str
    """Text to look for."""
    case_sensitive: bool = False
    """Match case exactly."""
    scope: Literal["any", "last"] = "any"
    """``any``: any agent message; ``last``: the final reply only."""
    normalize: list[Literal["numbers", "whitespace", "unicode"]] = Field(default_factory=list)
    """Normalise both the messages and ``text`` before looking: ``numbers`` compares numbers by value,
    thousands separators ignored (``1,234.50`` matches ``1234.5``), and never inside a longer number
    (``1234.5`` is not found in ``11234.56``); ``whitespace`` collapses runs of spaces and line breaks into one space;
    ``unicode`` applies NFKC, so full-width ``１２３`` and ``ＡＢＣ`` match ``123`` and ``ABC``. One name or a
    list, e.g. ``normalize: [numbers, whitespace]``. With any of them each message is searched on its own.
    Default: none (plain substring)."""

    @field_validator("normalize", mode="before")
    @classmethod
    def _one_name(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class ReplyNotContains(ReplyContains):
    """The agent's messages to the user do not contain ``text``."""

    kind: Literal["reply_not_contains"] = "reply_not_contains"  # type: ignore[assignment]


class ReplyMatches(_Base):
    """The agent's messages match the regular expression ``pattern``."""

    subject: ClassVar[Subject] = "reply"

    kind: Literal["reply_matches"] = "reply_matches"
    pattern: str
    """Python regular expression searched in each message."""
    scope: Literal["any", "last"] = "any"
    """``any``: any agent message; ``last``: the final reply only."""


class ReplyMentions(_Base):
    """The reply mentions the value of ``column`` of the row(s) matching ``where`` (e.g. a ticket id)."""

    subject: ClassVar[Subject] = "reply"

    kind: Literal["reply_mentions"] = "reply_mentions"
    table: str
    """Table to check."""
    column: str
    """Column used by the check (summed for ``net_change``, looked for in the reply for ``reply_mentions``)."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""
    scope: Literal["any", "last"] = "any"
    """``any``: any agent message; ``last``: the final reply only."""


class CustomAssertion(BaseModel):
    """An assertion graded by a grader the case's domain registers (see graders.md). Its key is the
    grader's name and its fields are the grader's parameters, e.g. ``- refund_matches_approval:
    {order_id: "4812"}`` (no parameters: ``- no_double_refund``). The name must be a grader of the domain
    and the parameters must fit its signature: both are checked when the suite loads, before any trial."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    kind: str
    """The grader's name (the assertion's key in a case file)."""
    description: str | None = None
    """Optional human wording of what the assertion checks, shown in reasons."""
    required: bool = True
    """Whether a failed check fails the trial (``false``: recorded only)."""

    @field_validator("kind")
    @classmethod
    def _grader_name(cls, value: str) -> str:
        if not GRADER_NAME.match(value):
            raise ValueError(f"{value!r} is not a built-in assertion ({', '.join(ASSERTION_KINDS)}) nor a grader name "
                             "(letters, digits and _)")
        return value

    @property
    def params(self) -> dict[str, Any]:
        """The grader's parameters as written in the case."""
        return dict(self.model_extra or {})


BUILTIN_ASSERTIONS: tuple[type[_Base], ...] = (
    RowCount, FieldEquals, SqlCheck, NetChange, UnchangedExcept, ExpectState, ReplyContains, ReplyNotContains, ReplyMatches,
    ReplyMentions, CommandSucceeds, FileUnchanged, FileExists, FileAbsent, FileMatches,
)
WORKSPACE_ASSERTIONS = frozenset({"command_succeeds", "file_unchanged", "file_exists", "file_absent", "file_matches"})
"""Kinds that need a workspace (``Domain(workspace=...)``): a case of another domain is refused at load."""
ASSERTION_KINDS: dict[str, type[_Base]] = {m.model_fields["kind"].default: m for m in BUILTIN_ASSERTIONS}
CUSTOM = "custom"
"""The tag (in validation errors: ``assertions.N.custom``) of an assertion that names a domain's grader."""


def _tag(value: Any) -> str | None:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    if not isinstance(kind, str):
        return None
    return kind if kind in ASSERTION_KINDS else CUSTOM


Assertion = Annotated[
    Annotated[RowCount, Tag("row_count")] | Annotated[FieldEquals, Tag("field_equals")]
    | Annotated[SqlCheck, Tag("sql")] | Annotated[NetChange, Tag("net_change")]
    | Annotated[UnchangedExcept, Tag("unchanged_except")] | Annotated[ExpectState, Tag("expect_state")]
    | Annotated[ReplyContains, Tag("reply_contains")]
    | Annotated[ReplyNotContains, Tag("reply_not_contains")] | Annotated[ReplyMatches, Tag("reply_matches")]
    | Annotated[ReplyMentions, Tag("reply_mentions")] | Annotated[CommandSucceeds, Tag("command_succeeds")]
    | Annotated[FileUnchanged, Tag("file_unchanged")] | Annotated[FileExists, Tag("file_exists")]
    | Annotated[FileAbsent, Tag("file_absent")] | Annotated[FileMatches, Tag("file_matches")]
    | Annotated[CustomAssertion, Tag(CUSTOM)],
    Discriminator(_tag, custom_error_type="invalid_assertion",
                  custom_error_message="an assertion is a single-key mapping, e.g. {row_count: {table: t, equals: 1}} "
                                       "or {my_grader: {param: value}}"),
]
SHORTHAND_FIELD = {"reply_contains": "text", "reply_not_contains": "text", "reply_matches": "pattern",
                   "expect_state": "reference", "command_succeeds": "run", "file_unchanged": "paths",
                   "file_exists": "path", "file_absent": "path"}


def expand_assertion(item: Any) -> Any:
    """Turn the file form ``{row_count: {...}}`` into ``{kind: row_count, ...}`` for validation.

    ``reply_contains: "38.5"`` is shorthand for ``reply_contains: {text: "38.5"}`` and ``expect_state:
    reference`` for ``expect_state: {reference: true}``; a bare name (``-
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
