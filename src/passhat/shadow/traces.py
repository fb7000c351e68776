"""Production conversations as ``passhat shadow`` reads them: the JSONL format, its checks, and detection.

A trace file is JSONL with one conversation per line (:class:`Conversation`), or OpenTelemetry traces as
OTLP/JSON (a whole-file ``ExportTraceServiceRequest``, or one per line as a collector's file exporter
writes them; ``shadow/otlp.py``). The format is decided per file by its first record.

Every string is redacted (:class:`~passhat.redaction.Redactor`, keys included) *before* the record is
validated, so nothing read from production reaches a file, a report or even an error message unredacted.
A malformed record stops everything with a :class:`~passhat.errors.UserError` naming ``file:line`` (or
the trace and span) and the field, before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from passhat.errors import UserError
from passhat.redaction import Redactor
from passhat.validation import first_problem

ErrorType = Literal["refused", "timeout", "lost_response", "unavailable"]
"""How a tool call failed: ``refused`` — the system said no (a business rule, a permission, bad arguments),
nothing happened; ``timeout`` — no answer came and the call did not take effect; ``lost_response`` — the
call took effect but its answer was lost; ``unavailable`` — the service failed (a 503), nothing happened."""
ERROR_TYPES: tuple[str, ...] = get_args(ErrorType)
ROLES = ("user", "assistant", "tool")
_STRICT = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class UserMessage(BaseModel):
    """Something the user said."""

    model_config = _STRICT
    role: Literal["user"]
    """``user``."""
    text: str
    """The message."""


class AssistantMessage(BaseModel):
    """Something the production agent said to the user; its last one is the conversation's reply."""

    model_config = _STRICT
    role: Literal["assistant"]
    """``assistant``."""
    text: str
    """The message."""


class ToolTurn(BaseModel):
    """One tool call of the production agent, with what came back: ``result``, or ``error``."""

    model_config = _STRICT
    role: Literal["tool"]
    """``tool``."""
    name: str = Field(min_length=1)
    """The tool, as the domain names it."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments (a JSON object)."""
    result: Any = None
    """What the tool returned (any JSON); leave out when it failed."""
    error: str | None = None
    """The error text the agent got, when the call failed."""
    error_type: ErrorType | None = None
    """How it failed: ``refused`` (the default), ``timeout``, ``lost_response`` or ``unavailable`` (see docs/shadow.md)."""

    @model_validator(mode="after")
    def _one_outcome(self) -> ToolTurn:
        if self.error is not None and self.result is not None:
            raise ValueError("give `result` (the call returned) or `error` (it failed), not both")
        if self.error_type is not None and self.error is None:
            raise ValueError("`error_type` says how the call failed: give the `error` text too")
        return self

    @property
    def failure(self) -> ErrorType | None:
        """How the call failed (``refused`` when the error has no type); None when it returned."""
        return None if self.error is None else (self.error_type or "refused")

    @property
    def took_effect(self) -> bool:
        """It returned, or it ran and its answer was lost (``lost_response``)."""
        return self.error is None or self.error_type == "lost_response"


Turn = Annotated[UserMessage | AssistantMessage | ToolTurn, Field(discriminator="role")]


class Conversation(BaseModel):
    """One production conversation: one line of a JSONL trace file."""

    model_config = _STRICT
    id: str = Field(min_length=1)
    """Unique in the input; names the conversation in the report and in ``passhat shadow promote``."""
    turns: list[Turn] = Field(min_length=1)
    """User and assistant messages and tool calls, in the order they happened (at least one user message)."""
    identity: str | None = None
    """Who the agent acted for (a customer or employee id in the domain's fixture)."""
    fixture: str | None = None
    """The domain fixture to run in (default: ``--fixture``)."""
    domain: str | None = None
    """The domain the conversation came from; when given it must be ``--domain``'s."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Strata for reports (channel, locale); copied to the shadow case."""

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("tags", mode="before")
    @classmethod
    def _tag_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
        return value

    @field_validator("turns")
    @classmethod
    def _a_user_speaks(cls, turns: list[Any]) -> list[Any]:
        if not any(isinstance(t, UserMessage) for t in turns):
            raise ValueError("no user message: the first one is what the candidate is asked")
        return turns

    @property
    def user_texts(self) -> list[str]:
        """What the user said, in order."""
        return [t.text for t in self.turns if isinstance(t, UserMessage)]

    @property
    def reply(self) -> str | None:
        """The production agent's last message to the user (None when it said nothing)."""
        said = [t.text for t in self.turns if isinstance(t, AssistantMessage)]
        return said[-1] if said else None

    def tool_turns(self) -> list[tuple[int, ToolTurn]]:
        """(index in ``turns``, call) for every tool call, in order."""
        return [(i, t) for i, t in enumerate(self.turns) if isinstance(t, ToolTurn)]


@dataclass(frozen=True)
class Recorded:
    """A conversation and where it was read, for messages that point at the input."""

    conversation: Conversation
    where: str
    """``file:line`` (JSONL), or ``file: trace ID`` (OTLP)."""
    spans: tuple[str | None, ...] = ()
    """OTLP: the span each turn came from (named in messages instead of the turn's index)."""

    def at(self, turn: int, field: str) -> str:
        """Where a field of one turn is, as a message names it."""
        span = self.spans[turn] if turn < len(self.spans) else None
        return f"{self.where}: span {span}: {field}" if span else f"{self.where}: turns.{turn}.{field}"


def _location(loc: tuple[Any, ...]) -> str:
    """A pydantic location as a field path, without the discriminator's tag (``turns.2.tool.name`` → ``turns.2.name``)."""
    parts = [p for i, p in enumerate(loc) if not (p in ROLES and i > 0 and isinstance(loc[i - 1], int))]
    return ".".join(str(p) for p in parts) or "(root)"


def parse_conversation(data: Any, where: str, redactor: Redactor, spans: Sequence[str | None] = ()) -> Recorded:
    """One conversation from its JSON mapping, redacted first, then checked field by field."""
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a JSON object (a conversation), got {type(data).__name__}")
    data = redactor.value(data)
    try:
        conversation = Conversation.model_validate(data)
    except ValidationError as exc:
        first, _, more = first_problem(exc)
        path, message = _location(first["loc"]), first["msg"]
        if first["type"] == "union_tag_not_found":
            path, message = f"{path}.role", f"missing: expected one of {', '.join(ROLES)}"
        elif first["type"] == "union_tag_invalid":
            path, message = f"{path}.role", f"expected one of {', '.join(ROLES)}, got {first['ctx']['tag']!r}"
        elif first["type"] == "extra_forbidden":
            message = "unknown field; see docs/shadow.md for the format"
        message = message.removeprefix("Value error, ")
        raise UserError(f"{where}: {path}: {message}{more}") from None
    return Recorded(conversation, where, tuple(spans))


def load_traces(paths: Sequence[Path], redactor: Redactor) -> list[Recorded]:
    """Every conversation of every file, in input order; conversation ids must be unique across them."""
    out: list[Recorded] = []
    for path in paths:
        out += _load_file(Path(path), redactor)
    seen: dict[str, str] = {}
    for rec in out:
        cid = rec.conversation.id
        if cid in seen:
            raise UserError(f"{rec.where}: id: conversation {cid!r} is also at {seen[cid]}; give each conversation its own id")
        seen[cid] = rec.where
    if not out:
        raise UserError(f"{', '.join(map(str, paths))}: no conversations (expected JSONL conversations or OTLP/JSON traces)")
    return out


def _load_file(path: Path, redactor: Redactor) -> list[Recorded]:
    from passhat.shadow.otlp import is_otlp, otlp_conversations

    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if text.lstrip().startswith("{") and len(text.strip().splitlines()) > 1:  # a pretty-printed document?
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            document = None  # JSON Lines: one record per line, read below
        if is_otlp(document):
            return otlp_conversations([(document, str(path))], path, redactor)
        if document is not None:
            return [parse_conversation(document, str(path), redactor)]
    records: list[tuple[Any, str]] = []
    kind = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        this = "otlp" if is_otlp(data) else "conversation"
        if kind is not None and this != kind:
            raise UserError(f"{where}: {'an OTLP trace request' if this == 'otlp' else 'a conversation'} in a file of "
                            f"{'OTLP trace requests' if kind == 'otlp' else 'conversations'}: one format per file")
        kind = this
        records.append((data, where))
    if kind == "otlp":
        return otlp_conversations(records, path, redactor)
    return [parse_conversation(data, where, redactor) for data, where in records]
