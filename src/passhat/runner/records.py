"""The trial record: everything about one trial, written whole as one JSON line of ``trials.jsonl``.

Each field's meaning is its docstring, so ``TrialRecord.model_json_schema()`` is the record's JSON Schema
and docs/records.md is generated from it (``python -m passhat.runner.record_reference``). Every record
says which version of this shape it has (``schema_version``); records written before versions were
recorded have the version-1 shape and are read as such. A record of a version this passhat does not read
is refused, naming the file, the line and what to do (:func:`check_record_version`).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.attribution import Failure
from passhat.episode import EndReason, Message, ModelCall, Usage
from passhat.graders import Grade
from passhat.models.files import SchemaVersionError
from passhat.models.finite import STRICT_FLOATS
from passhat.tools import ToolCall
from passhat.tracing import Span
from passhat.upstream.log import UpstreamLog

Outcome = Literal["pass", "fail", "error"]
"""``error`` is an infrastructure failure: neither a success nor a failure of the agent."""
RECORD_SCHEMA = "passhat.record/1"
"""The version of the record's shape this passhat writes and reads."""
NOT_A_RECORD = "fix or remove that line — passhat never skips a recorded trial"
"""What to do about a line that says it is another kind of file (a newer record says: upgrade passhat)."""
_DOCS = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)


class Timing(BaseModel):
    """Where the time went. Harness overhead = reset + diff + grade."""

    model_config = _DOCS
    started_at: str
    """Wall-clock start, ISO 8601 UTC."""
    total_s: float = 0.0
    """Seconds from the start of the trial to its record: reset, agent, diff and grading."""
    agent_s: float = 0.0
    """Time inside the agent, tools and user simulator included: the latency a user would feel."""
    reset_ms: float = 0.0
    """Milliseconds to give the trial its fresh world (copy of the fixture)."""
    diff_ms: float = 0.0
    """Milliseconds to compute what the trial changed in the world."""
    grade_ms: float = 0.0
    """Milliseconds of grading, the judge and the case's commands excepted."""
    judge_s: float = 0.0
    """Time spent by the LLM judge (model calls, so kept out of the harness overhead)."""
    commands_s: float = 0.0
    """Time spent running the case's ``command_succeeds`` commands (the project's own tests, so kept out of
    the harness overhead)."""

    @property
    def harness_ms(self) -> float:
        return self.reset_ms + self.diff_ms + self.grade_ms


class Isolation(BaseModel):
    """How one trial's agent was confined (docs/design/021)."""

    model_config = _DOCS
    kind: Literal["namespaces", "fallback", "none"]
    """``namespaces``: its own user, mount, PID and network namespaces, without capabilities (it reached only
    its trial's tools and the allowed hosts); ``fallback``: no namespaces on this machine, so a subreaper that
    kills all it started, another uid as root and the harness not dumpable, but no network or file
    confinement; ``none``: in passhat's own process, or a service passhat did not start."""
    details: str = ""
    """The same in words, with the allowed hosts or why the fallback."""


class TrialRecord(BaseModel):
    """One trial of one case: a line of ``trials.jsonl``."""

    model_config = _DOCS
    schema_version: Literal["passhat.record/1"] = "passhat.record/1"
    """The record's shape and its version, ``passhat.record/1``. Records written before versions were recorded
    have no such field and the version-1 shape; they are read as version 1."""
    case_id: str
    """The case (its ``id``)."""
    trial: int
    """0-based trial index within the case."""
    seed: int
    """The trial's seed, derived from the run seed and the case id: the same trial of a re-run gets the same."""
    outcome: Outcome
    """``pass`` (every required grade passed), ``fail``, or ``error``: an infrastructure failure, neither a
    success nor a failure of the agent (docs/design/002)."""
    end_reason: EndReason
    """How the trial ended: ``completed`` (the agent returned), ``user_stopped``, ``ended_by_tool``, a limit
    (``step_limit``, ``time_limit``, ``cost_limit``, ``error_limit``: too many failed tool calls), ``agent_error``
    (the agent raised) or ``harness_error``."""
    attempt: int = 1
    """1, or 2 when the first attempt hit an infrastructure error and was retried; more under Ray when
    attempts were lost to a worker that another trial's agent blocked for good (those do not spend the
    retry: runner/dispatch.py)."""
    grades: list[Grade] = Field(default_factory=list)
    """Every check's verdict, in the order they ran: the outcome passes when every required one does."""
    calls: list[ToolCall] = Field(default_factory=list)
    """Every tool call, in order, as the harness saw it (faults and refusals included)."""
    messages: list[Message] = Field(default_factory=list)
    """The conversation: the user's turns and the agent's replies."""
    reply: str = ""
    """The agent's final reply."""
    diff: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """Table → the rows the trial inserted, updated or deleted (``key``, ``kind``, ``before``, ``after``), against
    the fixture: what state assertions are checked on and what re-grading rebuilds the final state from."""
    files: dict[str, Any] | None = None
    """Workspace domains: the file changes against the fixture (``FileDiff.to_json()``: paths, kinds,
    hashes, text diffs and the new contents re-grading rebuilds the final tree from)."""
    usage: Usage = Field(default_factory=Usage)
    """What the agent spent (tokens, cost, model calls), as it reported it."""
    user_usage: Usage | None = None
    """What a model-played user simulator spent (``None`` for the scripted user). Part of the run's cost,
    reported apart from the agent's."""
    judge_usage: Usage | None = None
    """What the LLM judge spent grading this trial (``None`` without a judge). Part of the run's cost,
    reported apart from the agent's."""
    model_calls: list[ModelCall] = Field(default_factory=list)
    """Model calls the agent reported (tokens, cost, latency, time to first token)."""
    timing: Timing
    """Where the time went."""
    error: str | None = None
    """Traceback of an agent exception (outcome ``fail``) or infrastructure failure (``error``)."""
    failure: Failure | None = None
    """For a failed or errored trial: category, earliest failing step and evidence (docs/failures.md)."""
    trace_id: str | None = None
    """The trace id of ``spans`` (derived from the seed), as exported with ``passhat export``."""
    spans: list[Span] = Field(default_factory=list)
    """The trial as a tree of spans (trial → agent → model / tool / user turns, and grading)."""
    replayed: bool = False
    """True when at least one external tool call was answered from a cassette (``--replay``), not by the
    real service: the report says which trials ran on replayed tools."""
    upstreams: list[UpstreamLog] | None = None
    """Domains with upstream MCP servers: each server of this trial, its stderr (bounded) and the protocol
    problems it had (``None`` for other domains)."""
    isolation: Isolation | None = None
    """How the agent was kept from the harness and other trials (``None``: a record from before passhat said)."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.case_id, self.trial)

    def failed_grades(self) -> list[Grade]:
        return [g for g in self.grades if g.required and not g.passed]


_CURRENT_PREFIX = b'{"schema_version":"' + RECORD_SCHEMA.encode() + b'"'
_VERSION_KEY = b'"schema_version"'


def check_record_version(raw: bytes, where: str) -> None:
    """Refuse a stored line that is a record of another version (``where`` is ``file:line``).

    A record this passhat wrote starts with its version, so the check is a prefix comparison; a line
    without the word ``schema_version`` was written before versions were recorded (version 1). Only
    other lines are parsed, to read the version at the top level (the word may occur in a tool's result).
    """
    if raw.startswith(_CURRENT_PREFIX) or _VERSION_KEY not in raw:
        return
    try:
        found = json.loads(raw).get("schema_version", RECORD_SCHEMA)
    except (ValueError, AttributeError):
        return  # not a JSON object: the model's own error says so
    if found != RECORD_SCHEMA:
        newer = str(found).startswith(RECORD_SCHEMA.rpartition("/")[0] + "/")
        raise SchemaVersionError(where, str(found), RECORD_SCHEMA, "" if newer else NOT_A_RECORD)
