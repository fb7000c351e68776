"""Gate rules as data: one pydantic model per rule kind (the file as a whole is ``gate.schema``).

Field docstrings here are the gate-file reference (``docs/gates.md``). In a gate file each rule is a
single-key mapping, like assertions in a case file: ``- pass_hat_k: {k: 8, min: 0.25}``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.gate.select import Selection

Metric = Literal["pass_hat_k", "pass_at_k"]


class RuleBase(BaseModel):
    """Fields every rule has."""

    # every number of every rule (bars, budgets, α) is finite: a NaN bar compares false both ways
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)
    name: str | None = None
    """Label in reports and JUnit; defaults to the rule kind and its bar."""
    description: str = ""
    """Why the rule exists, for people reading the gate."""
    alpha: float | None = Field(None, gt=0, lt=0.5)
    """This rule's share of the gate's error rate: its PASS is a one-sided test at this α, and its FAIL
    one at the level Holm's step-down gives it among the gate's FAIL-capable rules (α/m first); defaults
    to the gate's ``alpha``."""

    def label(self) -> str:
        return self.name or self._default_label()

    def _default_label(self) -> str:
        return str(getattr(self, "kind", "rule"))


class CaseRule(RuleBase):
    """A rule about the run's cases, which a selection can narrow."""

    select: Selection = Field(default_factory=Selection)
    """Cases the rule looks at (default: every case of the run)."""

    def _default_label(self) -> str:
        where = "" if self.select.describe() == "all cases" else f" [{self.select.describe()}]"
        return f"{self._what()}{where}"

    def _what(self) -> str:
        return str(getattr(self, "kind", "rule"))


class NeverFails(CaseRule):
    """Every trial of every selected case passes (pass^k = 1 for all k): for what must never happen, such
    as permission violations. One failed trial is FAIL. The one-sided Clopper–Pearson lower bound on each
    case's per-trial pass rate is reported (8/8 → 0.688 at α = 0.05): what "never" means at this size."""

    kind: Literal["never_fails"] = "never_fails"
    min_lower_bound: float | None = Field(None, gt=0, lt=1)
    """If set, PASS also needs every selected case's one-sided Clopper–Pearson lower bound to reach it;
    otherwise all passed but too few trials to claim it, and the rule is INCONCLUSIVE."""

    def _what(self) -> str:
        return "never fails"


class NoNewFailures(CaseRule):
    """No selected case that passed every trial in the baseline now passes significantly less often (needs
    ``--baseline``): a one-sided Fisher exact test per case, then discrete Benjamini–Hochberg across cases
    calibrated exactly under "no case dropped", so an unchanged agent fails it at most α of the time. One
    failed trial after 8/8 is not a new failure (p = 0.5); 8/8 → 0/8 is (p = 0.00008). Needs 3 graded
    trials per case in each run to detect one case's drop; with fewer it FAILs only on several drops
    together (two cases 2/2 → 0/2: p = 1/36) and is otherwise INCONCLUSIVE."""

    kind: Literal["no_new_failures"] = "no_new_failures"

    def _what(self) -> str:
        return "no new failures"


class CaseSuccessRate(CaseRule):
    """The share of selected cases expected to pass one attempt: the mean over cases of each case's pass
    rate, with Gaffke's bounds over cases (cases sharing a ``group`` count as one unit). Trials are never
    pooled across cases. The quantity does not depend on how many trials ran (before issue 22 it was the
    share of cases passing every trial, which falls as trials are added); to require k trials in a row,
    use ``pass_hat_k``. PASS if the lower bound ≥ ``min``, FAIL if the upper bound < ``min``,
    INCONCLUSIVE otherwise."""

    kind: Literal["case_success_rate"] = "case_success_rate"
    min: float = Field(gt=0, le=1)
    """The bar for the share of cases passing one attempt (the mean per-case pass rate), e.g. 0.7."""

    def _what(self) -> str:
        return f"case success rate ≥ {self.min:g}"


class PassHatK(CaseRule):
    """Suite pass^k (mean over selected cases) against a bar, using its interval over cases (Gaffke's
    bounds): PASS if the lower bound ≥ ``min``, FAIL if the upper bound < ``min``, INCONCLUSIVE otherwise."""

    kind: Literal["pass_hat_k"] = "pass_hat_k"
    k: int = Field(ge=1)
    """How many trials must all succeed; the run needs at least k graded trials per case."""
    min: float = Field(ge=0, le=1)
    """The bar, e.g. 0.25 for "pass^8 ≥ 0.25"."""

    def _what(self) -> str:
        return f"pass^{self.k} ≥ {self.min:g}"


class PassAtK(PassHatK):
    """Suite pass@k (at least one of k trials succeeds) against a bar; decided like ``pass_hat_k``."""

    kind: Literal["pass_at_k"] = "pass_at_k"  # type: ignore[assignment]

    def _what(self) -> str:
        return f"pass@{self.k} ≥ {self.min:g}"


class NonInferior(CaseRule):
    """The candidate is not worse than the baseline by more than ``margin`` on a metric, from the paired
    interval of the mean per-case difference (needs ``--baseline``): PASS if the one-sided lower bound
    > −margin, FAIL if the one-sided upper bound < −margin, INCONCLUSIVE otherwise."""

    kind: Literal["non_inferior"] = "non_inferior"
    metric: Metric = "pass_hat_k"
    """``pass_hat_k`` or ``pass_at_k``."""
    k: int = Field(1, ge=1)
    """k of the metric (1: the per-trial pass rate)."""
    margin: float = Field(ge=0, lt=1)
    """δ: the largest drop still acceptable, e.g. 0.05 for five points."""

    def _what(self) -> str:
        sign = "^" if self.metric == "pass_hat_k" else "@"
        return f"pass{sign}{self.k} non-inferior within {self.margin:g}"


class Latency(CaseRule):
    """A percentile of per-trial latency over the selected trials is within a budget. A budget check on
    what users experienced in this run, not an inference: PASS or FAIL (INCONCLUSIVE with no data)."""

    kind: Literal["latency"] = "latency"
    percentile: float = Field(95, gt=0, le=100)
    """Which percentile, e.g. 95 for P95."""
    max_seconds: float = Field(gt=0)
    """The budget in seconds."""
    measure: Literal["end_to_end", "time_to_first_token"] = "end_to_end"
    """``end_to_end``: time inside the agent, tools and user simulator; ``time_to_first_token``: as
    reported by the agent (trials that did not report it are left out)."""

    def _what(self) -> str:
        return f"P{self.percentile:g} {self.measure.replace('_', ' ')} ≤ {self.max_seconds:g}s"


class CostPerSuccess(CaseRule):
    """Total cost of the selected trials divided by their successful trials is within a budget."""

    kind: Literal["cost_per_success"] = "cost_per_success"
    max: float = Field(ge=0)
    """The budget per successful trial, in the currency of the price table."""

    def _what(self) -> str:
        return f"cost per success ≤ {self.max:g}"


class JudgeAgreement(RuleBase):
    """The LLM judge agrees with human labels, read from the JSON report of ``passhat calibrate --out``."""

    kind: Literal["judge_agreement"] = "judge_agreement"
    file: str
    """Calibration report (JSON), relative to the gate file. Missing or unreadable is bad input (exit 2)."""
    statistic: str = "gwet_ac1"
    """Key in the report (dots for nested keys): ``gwet_ac1``, ``cohen_kappa``, ``percent_agreement``,
    ``sensitivity``, ``specificity``, ``swap_consistency``, ``test_retest``. Its value is a number or a
    mapping with ``estimate`` and optionally ``ci_low``/``ci_high``; null (undefined) fails closed."""
    min: float = Field(ge=-1, le=1)
    """The bar. With an interval in the file: PASS if ci_low ≥ min, FAIL if ci_high < min, else INCONCLUSIVE."""

    def _default_label(self) -> str:
        return f"judge {self.statistic} ≥ {self.min:g}"


class Canary(RuleBase):
    """Production outcomes of a candidate version against a baseline's, decided exactly as ``passhat canary
    BASELINE CANDIDATE --max-drop M --confidence C`` decides (docs/canary.md): PASS if the lower bound of
    Newcombe's interval for the success-rate difference (candidate − baseline) is > −``max_drop``, FAIL if
    its upper bound is < −``max_drop``, INCONCLUSIVE otherwise. Both files are read when the gate is
    evaluated and their sha256 recorded in gate.json. The interval is set by ``confidence``, not by
    ``alpha`` (refused here), so the gate and the command cannot disagree."""

    kind: Literal["canary"] = "canary"
    baseline: str
    """Outcome records (JSONL) of the baseline version, relative to the gate file. Missing, unreadable or a
    malformed line (named as file:line and field) is bad input (exit 2)."""
    candidate: str
    """Outcome records (JSONL) of the candidate version, relative to the gate file; as ``baseline``."""
    max_drop: float = Field(ge=0, lt=1)
    """How far the success rate may drop, e.g. 0.02 for two points (``--max-drop``)."""
    confidence: float = Field(0.95, gt=0, lt=1)
    """Two-sided confidence of the interval (``--confidence``); each verdict is a one-sided test at
    (1 − confidence) / 2."""

    @model_validator(mode="after")
    def _no_alpha(self) -> Canary:
        if self.alpha is not None:
            raise ValueError("a canary rule takes `confidence` (two-sided, as `passhat canary --confidence`), "
                             "not `alpha`")
        return self

    def _default_label(self) -> str:
        return f"canary success-rate drop < {self.max_drop:g}"
