"""Production conversations as ``passhat shadow`` reads them: the JSONL format, its checks, and detection.

A trace file is JSONL with one conversation per line (:class:`Conversation`), or OpenTelemetry traces as
OTLP/JSON (a whole-file ``ExportTraceServiceRequest``, or one per line as a collector's file exporter
writes them; ``shadow/otlp.py``). The format is decided per file by its first record. A file may be
gzip-compressed (``.jsonl.gz``; recognised by its first bytes, whatever its name). JSON Lines are read
line by line, so memory holds the conversations read, not the file's text; each file's sha256 (of its
bytes as stored) is kept for the report, so ``shadow.json`` says exactly which traces were replayed.

Every string is redacted (:class:`~passhat.redaction.Redactor`, keys included) *before* the record is
validated, so nothing read from production reaches a file, a report or even an error message unredacted.
A malformed record stops everything with a :class:`~passhat.errors.PasshatError` naming ``file:line`` (or
the trace and span) and the field, before anything is written.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, field_validator, model_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.errors import PasshatError
from passhat.inputs import Capped, check_depth, loads_nested, open_input, too_deep
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
    arguments: Annotated[dict[str, Any], WithJsonSchema({"anyOf": [
        {"type": "object", "additionalProperties": True}, {"type": "string", "contentMediaType": "application/json"}]})
    ] = Field(default_factory=dict)
    """The call's arguments: a JSON object, or a string holding one (as OpenAI's API logs them)."""
    result: Any = None
    """What the tool returned (any JSON); leave out when it failed."""
    error: str | None = None
    """The error text the agent got, when the call failed."""
    error_type: ErrorType | None = None
    """How it failed: ``refused`` (the default), ``timeout``, ``lost_response`` or ``unavailable`` (see docs/shadow.md)."""

    @field_validator("arguments", mode="before")
    @classmethod
    def _an_object(cls, value: Any) -> Any:
        if isinstance(value, str):  # a string that holds a JSON object was decoded before redaction
            raise ValueError("expected a JSON object, or a string holding one (as OpenAI's API logs arguments); "
                             "this string does not")
        return value

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


def _decoded_arguments(turn: Any) -> Any:
    """A tool turn whose ``arguments`` is a string holding a JSON object (OpenAI's format) with the object instead;
    a blank string is no arguments. Anything else is left for validation to refuse."""
    if not isinstance(turn, dict) or not isinstance(turn.get("arguments"), str):
        return turn
    text = turn["arguments"]
    try:
        value = loads_nested(text, "a tool turn's arguments") if text.strip() else {}
    except json.JSONDecodeError:
        return turn
    return {**turn, "arguments": value} if isinstance(value, dict) else turn


LONG_NUMBER = 10**10
"""Integers from here up (11 digits and more) may be phone or card numbers; shorter ones cannot."""


def _numbers_as_text(data: Any, redactor: Redactor) -> Any:
    """``data`` with every integer that the redactor would redact as text (a card or phone number logged as a JSON
    number) replaced by its placeholder; the redactor itself leaves numbers alone (a run record's seeds are
    19-digit integers)."""
    if isinstance(data, dict):
        return {k: _numbers_as_text(v, redactor) for k, v in data.items()}
    if isinstance(data, list):
        return [_numbers_as_text(v, redactor) for v in data]
    if isinstance(data, int) and not isinstance(data, bool) and abs(data) >= LONG_NUMBER:
        text = str(data)
        redacted = redactor.text(text)
        return data if redacted == text else redacted
    return data


def parse_conversation(data: Any, where: str, redactor: Redactor, spans: Sequence[str | None] = ()) -> Recorded:
    """One conversation from its JSON mapping, redacted first, then checked field by field.

    Arguments given as JSON text are decoded before redaction, so that redaction sees (and keeps) their
    structure: a card number in a JSON number must not turn the text into something that is not JSON. Such a
    number, wherever it is, is redacted too (as text: its placeholder)."""
    if not isinstance(data, dict):
        raise PasshatError(f"{where}: expected a JSON object (a conversation), got {type(data).__name__}")
    if isinstance(data.get("turns"), list):
        data = {**data, "turns": [_decoded_arguments(t) for t in data["turns"]]}
    if redactor.enabled:
        data = redactor.value(_numbers_as_text(data, redactor))
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
        raise PasshatError(f"{where}: {path}: {message}{more}") from None
    return Recorded(conversation, where, tuple(spans))


def read_traces(paths: Sequence[Path], redactor: Redactor) -> tuple[list[Recorded], list[tuple[str, int]]]:
    """Every conversation of every file, in input order, and each file's (sha256, conversations); conversation
    ids must be unique across the files."""
    out: list[Recorded] = []
    files: list[tuple[str, int]] = []
    for path in paths:
        recorded, digest = _load_file(Path(path), redactor)
        out += recorded
        files.append((digest, len(recorded)))
    seen: dict[str, str] = {}
    for rec in out:
        cid = rec.conversation.id
        if cid in seen:
            raise PasshatError(f"{rec.where}: id: conversation {cid!r} is also at {seen[cid]}; give each conversation its own id")
        seen[cid] = rec.where
    if not out:
        raise PasshatError(f"{', '.join(map(str, paths))}: no conversations (expected JSONL conversations or OTLP/JSON traces)")
    return out, files


def load_traces(paths: Sequence[Path], redactor: Redactor) -> list[Recorded]:
    """Every conversation of every file, in input order (:func:`read_traces` without the digests)."""
    return read_traces(paths, redactor)[0]


GZIP_MAGIC = b"\x1f\x8b"


class _Hashing(io.RawIOBase):
    """A binary file that hashes the bytes read through it: the digest is of exactly what was parsed."""

    def __init__(self, raw: io.BufferedIOBase) -> None:
        self.raw, self.sha256 = raw, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.raw.readinto(buffer)
        self.sha256.update(memoryview(buffer)[:n])
        return n


def _load_file(path: Path, redactor: Redactor) -> tuple[list[Recorded], str]:
    """The file's conversations and the sha256 of its bytes (compressed or not, as stored)."""
    with open_input(path, "trace") as raw:  # a regular file within the size cap (passhat/inputs.py)
        hashing = _Hashing(raw)
        binary = io.BufferedReader(hashing)
        compressed = binary.peek(2)[:2] == GZIP_MAGIC
        inflated = io.BufferedReader(Capped(gzip.GzipFile(fileobj=binary), path, "decompressed trace"))
        text = io.TextIOWrapper(inflated if compressed else binary, encoding="utf-8-sig")
        try:
            recorded = _read(text, path, redactor)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise PasshatError(f"{path}: not a readable gzip file ({exc or 'it ends too soon'})") from None
        while binary.read(1 << 20):  # the digest covers the whole file, whatever the parser left unread
            pass
    return recorded, hashing.sha256.hexdigest()


def _not_a_number(word: str) -> Any:
    """Python's JSON reader takes ``NaN`` and ``Infinity``; JSON has neither, and a recorded result holding one
    would reach the shadow folder as ``null`` (pydantic's default) or break the files other tools read."""
    raise ValueError(f"{word} is not a JSON number: a production trace holds finite numbers")


def _read(text: IO[str], path: Path, redactor: Redactor) -> list[Recorded]:
    """JSON Lines (conversations, or OTLP requests) read line by line; or one pretty-printed document."""
    from passhat.shadow.otlp import is_otlp, otlp_conversations

    out: list[Recorded] = []
    requests: list[tuple[Any, str]] = []
    kind = None
    number = 0
    try:
        for number, line in enumerate(text, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                data = json.loads(line, parse_constant=_not_a_number)
            except json.JSONDecodeError as exc:
                if kind is None and line.lstrip().startswith("{"):  # perhaps one document over many lines
                    return _document(line + text.read(), path, number, redactor)
                raise PasshatError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            except ValueError as exc:  # an integer of more digits than Python converts (4,300): not a decode error
                raise PasshatError(f"{where}: not valid JSON ({str(exc).partition(':')[0]})") from None
            except RecursionError:
                raise too_deep(where) from None
            check_depth(data, where)
            this = "otlp" if is_otlp(data) else "conversation"
            if kind is not None and this != kind:
                raise PasshatError(f"{where}: {'an OTLP trace request' if this == 'otlp' else 'a conversation'} in a file "
                                f"of {'OTLP trace requests' if kind == 'otlp' else 'conversations'}: one format per file")
            kind = this
            if kind == "otlp":
                requests.append((data, where))
            else:
                out.append(parse_conversation(data, where, redactor))
    except UnicodeDecodeError as exc:
        raise PasshatError(f"{path}: not UTF-8 text ({exc.reason}) after line {number}") from None
    return otlp_conversations(requests, path, redactor) if kind == "otlp" else out


def _document(text: str, path: Path, first: int, redactor: Redactor) -> list[Recorded]:
    """A file holding one JSON document that starts on line ``first``: an OTLP request or a conversation."""
    from passhat.shadow.otlp import is_otlp, otlp_conversations

    try:
        document = json.loads(text, parse_constant=_not_a_number)
    except json.JSONDecodeError as exc:
        raise PasshatError(f"{path}:{first + exc.lineno - 1}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:  # an integer past Python's 4,300 digits
        raise PasshatError(f"{path}:{first}: not valid JSON ({str(exc).partition(':')[0]})") from None
    except RecursionError:
        raise too_deep(f"{path}:{first}") from None
    check_depth(document, f"{path}:{first}")
    if is_otlp(document):
        return otlp_conversations([(document, str(path))], path, redactor)
    return [parse_conversation(document, str(path), redactor)]
