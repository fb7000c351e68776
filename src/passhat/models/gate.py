"""``gate.json``: a release gate's decision on a run — PASS, FAIL or INCONCLUSIVE — with every rule's numbers.

Written by ``passhat gate``, by ``passhat run --gate`` at the end of the run, and by ``Run.gate``.
See docs/gates.md.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.models.comparison import CaseChange, ExcludedCase, RunRef
from passhat.models.files import FileModel
from passhat.models.finite import STRICT_FLOATS
from passhat.models.manifest import GateRegistration, SequentialGateInfo

_DOCS = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
Outcome = Literal["PASS", "FAIL", "INCONCLUSIVE", "SKIPPED"]
GateOutcome = Literal["PASS", "FAIL", "INCONCLUSIVE"]


class RuleResult(BaseModel):
    """One rule's entry in ``gate.json``."""

    model_config = _DOCS
    name: str
    """The rule's label."""
    kind: str
    """The rule kind, e.g. ``pass_hat_k``."""
    outcome: Outcome
    """PASS, FAIL, INCONCLUSIVE, or SKIPPED (needs a baseline that was not given)."""
    reason: str
    """Why, in words: the numbers compared and what would change the outcome."""
    value: float | None = None
    """The observed value (estimate, percentile, count of new failures...)."""
    bar: float | None = None
    """The threshold it is compared with."""
    low: float | None = None
    """Lower bound used for the decision (one-sided 1 − α), when the rule is statistical."""
    high: float | None = None
    """Upper bound used for the decision (one-sided 1 − α), when the rule is statistical."""
    selection: str | None = None
    """The cases the rule looked at."""
    alpha: float | None = None
    """One-sided error rate of the decision, for statistical rules."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Per-case numbers, methods, excluded cases."""


class GateOverride(BaseModel):
    """A changed gate file evaluated anyway (``--allow-gate-change``): recorded, never silent."""

    model_config = _DOCS
    allowed_gate_change: bool = True
    """Always true: the override was asked for."""
    at: str
    """When (ISO 8601 UTC)."""
    registered_sha256: str
    """Hash of the gate file registered before the first trial."""
    used_sha256: str
    """Hash of the gate file evaluated instead."""
    message: str = ""
    """The override in words."""


class GateInfo(BaseModel):
    """Which gate was evaluated, and whether it is the one registered before the first trial."""

    model_config = _DOCS
    name: str
    """The gate's name."""
    alpha: float
    """The gate's one-sided error rate (a rule may set its own)."""
    path: str
    """The gate file evaluated."""
    sha256: str
    """Hash of the gate file's bytes."""
    source: Literal["file", "manifest"] = "file"
    """``manifest``: the file was gone and the rules recorded at registration were used."""
    preregistered: bool
    """The gate was recorded in the manifest before the first trial, unchanged since."""
    registered: GateRegistration | None = None
    """The registration (path, sha256, time), when there was one."""
    override: GateOverride | None = None
    """Set when a changed gate file was evaluated anyway (``--allow-gate-change``): never silent."""


class BaselineInfo(RunRef):
    """The baseline run and what changed against it."""

    compared_cases: int
    """Cases compared with the baseline."""
    excluded: list[ExcludedCase] = Field(default_factory=list)
    """Cases left out of the comparison, and why."""
    new_failures: list[CaseChange] = Field(default_factory=list)
    """Significant drops: what ``no_new_failures`` decides on."""
    failed_a_trial: list[CaseChange] = Field(default_factory=list)
    """Cases that passed every base trial and failed a candidate trial, within what chance gives."""
    new_passes: list[CaseChange] = Field(default_factory=list)
    """Cases that pass every trial now and did not in the baseline."""


class GateResult(FileModel):
    """``gate.json``: the gate's outcome, its exit code, and every rule's result."""

    schema_version: Literal["passhat.gate/1"] = "passhat.gate/1"
    """``passhat.gate/1``; an unversioned file has this shape."""
    outcome: GateOutcome
    """FAIL if any rule fails; else INCONCLUSIVE if any is (or none could be decided); else PASS."""
    exit_code: int
    """0 PASS, 1 FAIL, 3 INCONCLUSIVE."""
    gate: GateInfo
    """The gate evaluated, and whether it was pre-registered."""
    run: RunRef
    """The run it decided on."""
    baseline: BaselineInfo | None = None
    """The baseline run (``--baseline``), if any."""
    allow_changed_cases: bool = False
    """A baseline of another suite version was compared on its unchanged cases."""
    evaluated_at: str
    """When (ISO 8601 UTC)."""
    passhat_version: str | None = None
    """The passhat that evaluated it."""
    rules: list[RuleResult] = Field(default_factory=list)
    """One result per rule, in file order."""
    sequential: SequentialGateInfo | None = None
    """For a sequential run: the looks the gate was decided at, and where the run stopped."""

    @property
    def passed(self) -> bool:
        return self.outcome == "PASS"

    def failing_rules(self) -> list[RuleResult]:
        """Rules that did not PASS (FAIL first, then INCONCLUSIVE)."""
        order = {"FAIL": 0, "INCONCLUSIVE": 1}
        return sorted((r for r in self.rules if r.outcome in order), key=lambda r: order[r.outcome])


class GateLook(BaseModel):
    """One line of ``RUN/gate-looks.jsonl``: a gate evaluation of the run and the data it saw, so that gating
    the run again on more trials can be refused as a second look (passhat.gate.ledger)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
    at: str
    """When the gate was evaluated (ISO 8601 UTC)."""
    trials_bytes: int
    """The size of ``trials.jsonl`` it saw: records are only appended, so the same size is the same data."""
    source: str | None = None
    """Who asked: ``passhat run`` (``--gate``), ``passhat gate`` or ``api`` (``Run.gate()``, ``evaluate_gate``)."""
    outcome: str | None = None
    """PASS, FAIL or INCONCLUSIVE."""
    gate_sha256: str | None = None
    """Hash of the gate file's bytes."""
    baseline: str | None = None
    """The baseline run's folder, if any."""
    trials: int | None = None
    """Trials recorded (graded and infrastructure errors) at the look."""
    sequential_look: int | None = None
    """For a sequential run: how many of its planned looks the gate replayed."""
    stopped: str | None = None
    """For a sequential run that stopped: why (``decided``, ``failed``, ``max_trials``)."""
