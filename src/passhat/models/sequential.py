"""The ``sequential`` block of manifest.json, summary.json and gate.json: a sequential run's looks.

``passhat run --gate FILE --sequential`` evaluates its gate at planned looks (trials per case) and stops
once the gate is decided (docs/gates.md, design 027). The manifest records the design before the first
trial and each look as it is taken; the summary and gate.json repeat where the run stopped and why.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

_DOCS = ConfigDict(use_attribute_docstrings=True)
StopReason = Literal["decided", "failed", "max_trials"]


class SequentialDesign(BaseModel):
    """The looks and how α is spent across them, fixed before the first trial."""

    model_config = _DOCS
    looks: list[int]
    """Trials per case at each look, increasing; the last is the most a case gets."""
    spending: Literal["pocock", "obrien_fleming"] = "obrien_fleming"
    """The Lan–DeMets spending function of the gate (O'Brien–Fleming type: 2 − 2Φ(z_{1−α/2}/√τ))."""
    time_scale: Literal["trials"] = "trials"
    """What τ measures: trials per case at the look over trials per case at the last look."""


class SequentialBaseline(BaseModel):
    """The baseline run the looks compared with (a sequential run is always gated against it)."""

    model_config = _DOCS
    folder: str
    """Its run folder, absolute."""
    trials_bytes: int
    """The size of its trials.jsonl: another run at the same path is not mistaken for it."""


class SequentialLook(BaseModel):
    """What the gate decided at one look."""

    model_config = _DOCS
    look: int
    """1-based position among the design's looks."""
    trials_per_case: int
    """Trials per case at this look."""
    outcome: str
    """The gate's outcome had the run ended here."""
    settled: dict[str, str] = Field(default_factory=dict)
    """Rules whose verdict became final at this look → that verdict."""
    levels: dict[str, float] = Field(default_factory=dict)
    """Rules tested at this look → the nominal one-sided level of the test (below the rule's α)."""
    stop: StopReason | None = None
    """Why the run stopped here (None: it went on)."""


class SequentialStop(BaseModel):
    """Where a sequential run stopped, why, and what it saved against the fixed design."""

    model_config = _DOCS
    look: int
    """The look it stopped at (1-based)."""
    trials_per_case: int
    """Trials per case run."""
    reason: StopReason
    """``decided`` (every rule settled), ``failed`` (a final FAIL: the gate fails whatever more trials show)
    or ``max_trials`` (the last look)."""
    outcome: str
    """The gate's outcome at that look."""
    trials_run: int
    """Trials recorded (graded and infrastructure errors)."""
    fixed_design_trials: int
    """Trials the fixed design at the last look would have run: cases × the last look."""
    trials_saved: int
    """``fixed_design_trials − trials_run``."""
    confidence: float
    """Two-sided confidence of the summary's suite intervals at this look: repeated confidence intervals
    that cover at every look together, so whichever look the run stopped at (0.95 spent across the looks)."""


class SequentialRecord(BaseModel):
    """``manifest.sequential`` and ``summary.sequential``: the design, the looks taken, where it stopped."""

    model_config = _DOCS
    design: SequentialDesign
    """The looks and the spending function."""
    baseline: SequentialBaseline | None = None
    """The baseline the looks compared with (None: none; baseline rules were SKIPPED)."""
    looks: list[SequentialLook] = Field(default_factory=list)
    """Every look taken so far, in order."""
    evaluated_at: str | None = None
    """When the last look was evaluated (ISO 8601 UTC)."""
    stopped: SequentialStop | None = None
    """Where and why the run stopped (None while it runs, or if it was killed between looks)."""


class SequentialGateInfo(BaseModel):
    """gate.json's ``sequential`` block: the looks the gate was decided at."""

    model_config = _DOCS
    looks: list[SequentialLook] = Field(default_factory=list)
    """Every look replayed, in order."""
    looks_planned: int | None = None
    """How many looks the design has."""
    stopped: dict[str, int | str] | None = None
    """``{look, trials_per_case, reason, trials_run, fixed_design_trials, trials_saved}`` of the look the run
    stopped at (None: it has not stopped)."""
