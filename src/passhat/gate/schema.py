"""The gate file: a name, an error rate and a list of rules, validated strictly.

Each rule kind is a model in ``gate.model``; ``Rule`` is their union, picked by the single key of a
rule mapping (``- never_fails: {...}``), the same shape as assertions in a case file.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.gate.model import (
    Canary,
    CaseSuccessRate,
    CostPerSuccess,
    JudgeAgreement,
    Latency,
    NeverFails,
    NoNewFailures,
    NonInferior,
    PassAtK,
    PassHatK,
    RuleBase,
)

RULE_MODELS: tuple[type[RuleBase], ...] = (
    NeverFails, NoNewFailures, CaseSuccessRate, PassHatK, PassAtK, NonInferior, Latency, CostPerSuccess,
    JudgeAgreement, Canary,
)
RULE_KINDS: dict[str, type[RuleBase]] = {m.model_fields["kind"].default: m for m in RULE_MODELS}
Rule = Annotated[
    NeverFails | NoNewFailures | CaseSuccessRate | PassHatK | PassAtK | NonInferior | Latency | CostPerSuccess
    | JudgeAgreement | Canary,
    Field(discriminator="kind"),
]


def expand_rule(item: Any) -> Any:
    """The file form ``{pass_hat_k: {k: 8, min: 0.25}}`` → ``{kind: pass_hat_k, k: 8, min: 0.25}``."""
    if isinstance(item, dict) and "kind" not in item and len(item) == 1:
        ((kind, body),) = item.items()
        if body is None:
            body = {}
        if isinstance(body, dict):
            return {"kind": kind, **body}
    return item


class GateFile(BaseModel):
    """A release gate: rules decided PASS, FAIL or INCONCLUSIVE; the gate fails if any rule fails."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)
    name: str = "gate"
    """Label in reports (JUnit test suite name)."""
    description: str = ""
    """What the gate protects and who agreed to it."""
    alpha: float = Field(0.05, gt=0, lt=0.5)
    """The gate's error rate. A gate whose statistical rules all sit at their bars FAILs by accident at
    most α of the time: the FAILs of its FAIL-capable rules are decided together by Holm's step-down
    (a FAIL holds at α/m, the next at α/(m − 1), …). Each rule PASSes by accident at most α of the time,
    and the gate PASSes only if every rule does. A bound compared with a bar is a one-sided (1 − α)
    bound, the end of a two-sided (1 − 2α) interval: 90 % for α = 0.05."""
    require_baseline: bool = False
    """If true, evaluating without ``--baseline`` is bad input (exit 2) instead of skipping baseline rules."""
    rules: list[Rule] = Field(min_length=1)
    """The rules; all are evaluated and reported."""

    @field_validator("rules", mode="before")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        return [expand_rule(v) for v in value] if isinstance(value, list) else value
