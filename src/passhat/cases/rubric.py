"""The ``judge:`` section of a case: a rubric for what code cannot decide.

Each criterion is judged on its own, with anchored levels described by features a reader can check
(seed 002: 1 = does not say why the claim is over the limit; 3 = gives the excess but not the approval
step; 5 = clause, limit, excess, status and ticket id). The judge model is chosen per run, not here,
so a suite's content hash does not change when the judge does; the run's manifest records it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)

JudgeData = Literal["transcript", "tool_calls", "final_state", "policy"]
DEFAULT_INCLUDE: tuple[JudgeData, ...] = ("transcript", "tool_calls", "final_state")


class Criterion(BaseModel):
    """One criterion, scored on its own scale with anchored levels."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    name: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
    """Short id, e.g. ``explanation``; the judge answers per name and the grade is ``judge: NAME``."""
    question: str
    """What to judge, e.g. "Does the reply tell the employee why the claim is over the limit and what happens next?"."""
    levels: dict[int, str]
    """Anchors: score → the checkable features of a reply at that level, e.g. ``{1: ..., 3: ..., 5: ...}``.
    Any integer from the lowest to the highest anchor is a valid score; anything else fails the grade."""
    pass_score: int | None = None
    """Lowest score that passes (default: the highest anchor)."""
    required: bool = True
    """Whether a failed criterion fails the trial (``false``: recorded only)."""

    @model_validator(mode="after")
    def _scale(self) -> Criterion:
        if len(self.levels) < 2:
            raise ValueError(f"criterion {self.name!r}: give at least two anchored levels, e.g. {{1: ..., 5: ...}}")
        if self.pass_score is not None and not self.low <= self.pass_score <= self.high:
            raise ValueError(f"criterion {self.name!r}: pass_score {self.pass_score} is outside {self.low}..{self.high}")
        return self

    @property
    def low(self) -> int:
        return min(self.levels)

    @property
    def high(self) -> int:
        return max(self.levels)

    @property
    def threshold(self) -> int:
        """The lowest passing score."""
        return self.high if self.pass_score is None else self.pass_score


class JudgeSpec(BaseModel):
    """An LLM judge for what code cannot check (clarity, tone, faithfulness to the policy). Opt-in per
    case; the model is chosen per run with ``passhat run --judge MODEL``. A judge answer that cannot be
    parsed, omits a criterion or scores out of range fails the criterion."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    criteria: list[Criterion] = Field(min_length=1)
    """The criteria, each judged and graded separately."""
    include: list[JudgeData] = Field(default_factory=lambda: list(DEFAULT_INCLUDE))
    """What the judge sees, passed as delimited data: ``transcript`` (the messages), ``tool_calls``,
    ``final_state`` (rows the trial changed, before and after), ``policy`` (the domain's policy)."""
    reference: str = ""
    """Facts a good answer contains, or a reference answer (reference-guided judging is more reliable)."""

    @model_validator(mode="after")
    def _unique(self) -> JudgeSpec:
        names = [c.name for c in self.criteria]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"criterion names must be unique; repeated: {dupes}")
        return self
