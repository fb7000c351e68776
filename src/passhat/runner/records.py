"""The trial record: everything about one trial, written whole as one JSON line."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from passhat.episode import EndReason, Message, Usage
from passhat.graders import Grade
from passhat.tools import ToolCall

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

    @property
    def harness_ms(self) -> float:
        return self.reset_ms + self.diff_ms + self.grade_ms


class TrialRecord(BaseModel):
    """One trial of one case."""

    case_id: str
    trial: int
    """0-based trial index within the case."""
    seed: int
    outcome: Outcome
    end_reason: EndReason
    attempt: int = 1
    """1, or 2 when the first attempt hit an infrastructure error and was retried."""
    grades: list[Grade] = Field(default_factory=list)
    calls: list[ToolCall] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    reply: str = ""
    diff: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    timing: Timing
    error: str | None = None
    """Traceback of an agent exception (outcome ``fail``) or infrastructure failure (``error``)."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.case_id, self.trial)

    def failed_grades(self) -> list[Grade]:
        return [g for g in self.grades if g.required and not g.passed]
