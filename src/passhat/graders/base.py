"""Grades and what graders see.

A grader is ``(trial input) -> list[Grade]``. Every grade carries a reason a person can act on (which
check, expected vs actual). A trial passes only if every required grade passes; a grader that cannot
decide fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from passhat.cases.model import Case
from passhat.episode import EndReason, Message, Usage
from passhat.tools import ToolCall
from passhat.world import Diff

GraderName = Literal["rules", "state", "trajectory", "reply", "judge"]


class Grade(BaseModel):
    """The verdict of one check."""

    grader: GraderName
    name: str
    """Which check, e.g. ``row_count(tickets where invoice_id='INV-102')``."""
    passed: bool
    reason: str
    """Why, in words a person can act on (expected vs actual)."""
    required: bool = True
    """Informational grades (``required: false``) are recorded but do not decide the outcome."""
    score: float | None = None
    details: dict[str, Any] = Field(default_factory=dict)


@dataclass
class TrialView:
    """Everything graders may look at after a trial. ``query`` runs read-only SQL on the final state."""

    case: Case
    calls: list[ToolCall]
    messages: list[Message]
    diff: Diff
    end_reason: EndReason
    usage: Usage
    agent_seconds: float
    query: Any
    """``(sql, params) -> list[tuple]`` on the final state (read-only)."""
    error: str | None = None

    @property
    def agent_texts(self) -> list[str]:
        return [m.text for m in self.messages if m.role == "agent"]


class Grader(Protocol):
    """A grader: a function of the trial that returns its grades."""

    def __call__(self, view: TrialView) -> list[Grade]: ...


def trial_passed(grades: list[Grade]) -> bool:
    """All required grades pass (and there is at least one, so an empty grading never passes)."""
    required = [g for g in grades if g.required]
    return bool(required) and all(g.passed for g in required)
