"""Grades and what graders see.

A grader is ``(trial input) -> list[Grade]``. Every grade carries a reason a person can act on (which
check, expected vs actual). A trial passes only if every required grade passes; a grader that cannot
decide fails closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.cases.model import Case
from passhat.episode import EndReason, Message, Usage
from passhat.models.finite import STRICT_FLOATS
from passhat.tools import ToolCall
from passhat.world import Diff, TableInfo

if TYPE_CHECKING:
    from passhat.graders.declare import CustomGrader
    from passhat.workspace.sandbox import CommandResult
    from passhat.workspace.tree import FileDiff

GraderName = Literal["rules", "state", "trajectory", "reply", "judge"]
"""The closed vocabulary of graders. A custom grader's grades carry the name of the grader of its kind
(``state``, ``trajectory``, ``reply`` or ``judge``) and its own name in ``details["custom_grader"]``."""


class Grade(BaseModel):
    """The verdict of one check."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
    grader: GraderName
    """The grader that checked: ``rules``, ``state``, ``trajectory``, ``reply`` or ``judge`` (a custom grader
    carries the name of its kind, and its own in ``details.custom_grader``)."""
    name: str
    """Which check, e.g. ``row_count(tickets where invoice_id='INV-102')``."""
    passed: bool
    """Whether the check passed."""
    reason: str
    """Why, in words a person can act on (expected vs actual)."""
    required: bool = True
    """Informational grades (``required: false``) are recorded but do not decide the outcome."""
    score: float | None = None
    """A graded score, when the check gives one (the judge's score on a criterion)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """The grader's own evidence (expected and actual values, the step, the judge's verdict…), as each grader
    documents it."""


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
    """``(sql, params) -> list[tuple]`` on the final state (read-only; ``?`` marks a parameter on every
    database kind: docs/worlds.md)."""
    error: str | None = None
    graders: Mapping[str, CustomGrader] = field(default_factory=dict)
    """The custom graders of the case's domain, by name (``Domain.graders``)."""
    expected: Diff | None = None
    """The row changes the case's ``reference`` calls make on its fixture (``cases/expected.py``), for
    ``expect_state: reference``; ``None`` when the case has no reference."""
    files: FileDiff | None = None
    """Workspace domains: files added, removed or modified against the fixture (``None`` without a workspace)."""
    workspace: Path | None = None
    """Workspace domains: the root of the final tree (the trial's copy, or one rebuilt for re-grading)."""
    commands: Mapping[int, CommandResult] = field(default_factory=dict)
    """Results of the case's ``command_succeeds`` commands on the final tree, by assertion position."""
    tables: Mapping[str, TableInfo] = field(default_factory=dict)
    """Columns and primary key of every table of the final state, whatever database holds it (a grader
    asks here rather than a database's own catalog, so one check works on SQLite and PostgreSQL alike)."""

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
