"""The trial record: everything about one trial, written whole as one JSON line."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from passhat.attribution import Failure
from passhat.episode import EndReason, Message, ModelCall, Usage
from passhat.graders import Grade
from passhat.tools import ToolCall
from passhat.tracing import Span
from passhat.upstream.log import UpstreamLog

Outcome = Literal["pass", "fail", "error"]
"""``error`` is an infrastructure failure: neither a success nor a failure of the agent."""


class Timing(BaseModel):
    """Where the time went. Harness overhead = reset + diff + grade."""

    started_at: str
    """Wall-clock start, ISO 8601 UTC."""
    total_s: float = 0.0
    agent_s: float = 0.0
    """Time inside the agent, tools and user simulator included: the latency a user would feel."""
    reset_ms: float = 0.0
    diff_ms: float = 0.0
    grade_ms: float = 0.0
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

    kind: Literal["namespaces", "fallback", "none"]
    """``namespaces``: its own user, mount, PID and network namespaces, without capabilities (it reached only
    its trial's tools and the allowed hosts); ``fallback``: no namespaces on this machine, so a subreaper that
    kills all it started, another uid as root and the harness not dumpable, but no network or file
    confinement; ``none``: in passhat's own process, or a service passhat did not start."""
    details: str = ""
    """The same in words, with the allowed hosts or why the fallback."""


class TrialRecord(BaseModel):
    """One trial of one case."""

    case_id: str
    trial: int
    """0-based trial index within the case."""
    seed: int
    outcome: Outcome
    end_reason: EndReason
    attempt: int = 1
    """1, or 2 when the first attempt hit an infrastructure error and was retried; more under Ray when
    attempts were lost to a worker that another trial's agent blocked for good (those do not spend the
    retry: runner/ray_dispatch.py)."""
    grades: list[Grade] = Field(default_factory=list)
    calls: list[ToolCall] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    reply: str = ""
    diff: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    files: dict[str, Any] | None = None
    """Workspace domains: the file changes against the fixture (``FileDiff.to_json()``: paths, kinds,
    hashes, text diffs and the new contents re-grading rebuilds the final tree from)."""
    usage: Usage = Field(default_factory=Usage)
    user_usage: Usage | None = None
    """What a model-played user simulator spent (``None`` for the scripted user). Part of the run's cost,
    reported apart from the agent's."""
    judge_usage: Usage | None = None
    """What the LLM judge spent grading this trial (``None`` without a judge). Part of the run's cost,
    reported apart from the agent's."""
    model_calls: list[ModelCall] = Field(default_factory=list)
    """Model calls the agent reported (tokens, cost, latency, time to first token)."""
    timing: Timing
    error: str | None = None
    """Traceback of an agent exception (outcome ``fail``) or infrastructure failure (``error``)."""
    failure: Failure | None = None
    """For a failed or errored trial: category, earliest failing step and evidence (docs/failures.md)."""
    trace_id: str | None = None
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
