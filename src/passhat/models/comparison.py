"""The comparison of two runs (``passhat compare --json``, ``Run.compare``): paired, case by case.

``Comparison.metrics["pass_hat_4"]`` (or ``Comparison.pass_hat_k(4)``) is the paired difference
candidate − base with its interval and test; ``new_failures`` lists the cases that passed every base
trial and not every candidate trial. See docs/compare.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.metric_names import PassMetric, metric_key
from passhat.models.files import FileModel
from passhat.models.finite import STRICT_FLOATS

_DOCS = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)


class RunRef(BaseModel):
    """Which run a comparison or a gate result is about."""

    model_config = _DOCS
    folder: str
    """The run folder."""
    agent: str | None = None
    """The agent, as in the run's manifest."""
    suite: str | None = None
    """The suite's name."""
    suite_hash: str | None = None
    """The suite's content hash."""
    trials: int | None = None
    """Trials planned per case."""
    seed: int | None = None
    """The run seed."""
    status: str | None = None
    """``complete``, or ``running`` for a run that has not finished (or was killed)."""


class Discordant(BaseModel):
    """For 0/1 per-case metrics: cases that pass in only one of the runs."""

    model_config = _DOCS
    base_only: int
    """Cases passing in the base run only."""
    candidate_only: int
    """Cases passing in the candidate run only."""


class PairedMetric(BaseModel):
    """One metric compared case by case: mean difference candidate − base, its interval and test."""

    model_config = _DOCS
    delta: float
    """Mean over cases of candidate − base."""
    ci_low: float
    """Lower end of the two-sided interval on ``delta``."""
    ci_high: float
    """Upper end of that interval."""
    p_value: float | None = None
    """Two-sided p-value of "the candidate behaved as the base did on these cases": the within-case
    permutation test, exact at any size (docs/compare.md). Before issue 22 it was the interval inverted,
    now ``p_interval``."""
    p_interval: float | None = None
    """The interval inverted: below 1 − confidence exactly when the interval excludes 0."""
    test: str
    """The interval's own test: ``paired_t``, ``paired_t_clustered``, ``mcnemar``, ``bootstrap_bca``…"""
    p_test: float | None = None
    """The test's own p-value (before the union with the pseudo-case interval)."""
    p_pseudocase: float | None = None
    """The pseudo-case interval's p-value."""
    method: str
    """How the interval was obtained."""
    confidence: float
    """Level of the interval."""
    base: float
    """Mean of the metric in the base run over the compared cases."""
    candidate: float
    """Mean in the candidate run over the same cases."""
    correlation: float | None = None
    """Correlation of the per-case values between the runs (what pairing gains)."""
    sd_diff: float | None = None
    """Standard deviation of the per-case differences."""
    se: float | None = None
    """Standard error of ``delta``."""
    cases: int
    """Cases compared for this metric (at least k graded trials in both runs)."""
    units: int
    """Independent units among them."""
    excluded: list[str] = Field(default_factory=list)
    """Cases with too few trials for this k in one of the runs."""
    mde: float | None = None
    """Minimum detectable effect: the mean change, as a uniform drop of every case's pass rate, that
    ``p_value``'s test finds with 80 % power at two-sided α = 0.05."""
    discordant: Discordant | None = None
    """For 0/1 metrics: cases passing in only one run."""
    p_midp: float | None = None
    """McNemar mid-p, beside the reported test (0/1 metrics)."""
    p_holm: float | None = None
    """In strata: the p-value adjusted with Holm within the tag and metric."""

    @property
    def low(self) -> float:
        """Lower end of the interval (``ci_low``)."""
        return self.ci_low

    @property
    def high(self) -> float:
        """Upper end of the interval (``ci_high``)."""
        return self.ci_high

    def __repr__(self) -> str:
        p = "—" if self.p_value is None else f"{self.p_value:.3g}"
        return (f"PairedMetric(Δ {self.delta:+.3f} [{self.ci_low:+.3f}, {self.ci_high:+.3f}], p {p}, "
                f"base {self.base:.3f} → candidate {self.candidate:.3f} over {self.cases} case(s))")

    __str__ = __repr__


class CaseChange(BaseModel):
    """A case whose all-pass status differs between the runs."""

    model_config = _DOCS
    id: str
    """The case id."""
    base: str
    """``passes/graded`` in the base run, e.g. ``8/8``."""
    candidate: str
    """``passes/graded`` in the candidate run."""
    reason: str | None = None
    """The candidate's commonest first failing check."""
    p_value: float | None = None
    """New failures: one-sided Fisher exact p-value of a drop."""
    significant: bool | None = None
    """New failures: whether the drop survives Benjamini–Hochberg over the cases (chance failures do not)."""


class Changes(BaseModel):
    """Cases that changed, with their counts."""

    model_config = _DOCS
    new_failures: list[CaseChange] = Field(default_factory=list)
    """Passed every base trial, not every candidate trial."""
    new_passes: list[CaseChange] = Field(default_factory=list)
    """Passed every candidate trial, not every base trial."""
    missing: list[CaseChange] = Field(default_factory=list)
    """Passed every base trial and has no graded candidate trial."""


class ExcludedCase(BaseModel):
    """A case left out of a comparison, and why (never silently dropped)."""

    model_config = _DOCS
    id: str
    """The case id."""
    reason: str
    """Why it was left out, e.g. ``case content changed``."""


class ComparedCases(BaseModel):
    """Which cases a comparison is about."""

    model_config = _DOCS
    compared: int
    """Cases compared."""
    excluded: list[ExcludedCase] = Field(default_factory=list)
    """Cases left out (changed content or domain, only in one run)."""


class MdeSettings(BaseModel):
    """The settings of the minimum detectable effects reported."""

    model_config = _DOCS
    alpha: float
    """Two-sided error rate of the test behind the MDE."""
    power: float
    """Power at which an effect counts as detectable."""
    two_sided: bool
    """Whether the test is two-sided."""


class StratumComparison(BaseModel):
    """One tag value: the number of cases, then ``pass_hat_1`` and ``pass_hat_K`` entries (Holm-adjusted)."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS, extra="allow")
    cases: int
    """Cases with this tag value."""
    __pydantic_extra__: dict[str, PairedMetric] = Field(init=False)
    """``pass_hat_1`` and ``pass_hat_K`` → the paired difference within the stratum (with ``p_holm``)."""

    def metrics(self) -> dict[str, PairedMetric]:
        """``pass_hat_1`` and ``pass_hat_K`` → the paired difference within the stratum."""
        return dict(self.__pydantic_extra__ or {})


class Comparison(FileModel):
    """A paired comparison of a candidate run with a base run of the same suite."""

    schema_version: Literal["passhat.comparison/1"] = "passhat.comparison/1"
    """``passhat.comparison/1``; an unversioned file has this shape."""
    base: RunRef
    """The base (reference) run."""
    candidate: RunRef
    """The candidate run, compared with the base."""
    same_suite: bool
    """Both runs have the same suite hash (otherwise only unchanged cases were compared)."""
    confidence: float
    """Level of every two-sided interval."""
    seed: int
    """Bootstrap seed (``interval="bca"`` only)."""
    interval: Literal["t", "bca"]
    """``t``: t-interval over cases (Tango's score interval for 0/1 metrics); ``bca``: paired BCa bootstrap."""
    mde: MdeSettings
    """The settings of every ``mde``."""
    cases: ComparedCases
    """How many cases were compared, and which were left out and why."""
    metrics: dict[str, PairedMetric] = Field(default_factory=dict)
    """``pass_hat_K`` / ``pass_at_K`` → the paired difference."""
    new_failures: list[str] = Field(default_factory=list)
    """Ids of the new failures (details, with their Fisher p-values, in ``changes``)."""
    new_passes: list[str] = Field(default_factory=list)
    """Ids of the new passes."""
    missing: list[str] = Field(default_factory=list)
    """Ids of fully passing base cases with no graded candidate trial."""
    changes: Changes = Field(default_factory=Changes)
    """The changed cases with their counts and tests."""
    strata: dict[str, dict[str, StratumComparison]] = Field(default_factory=dict)
    """Tag → value → per-stratum comparison."""

    def pass_hat_k(self, k: int) -> PairedMetric:
        """The paired difference in pass^k; ``KeyError`` when no case has k trials in both runs."""
        return self._metric("pass_hat_k", k)

    def pass_at_k(self, k: int) -> PairedMetric:
        """The paired difference in pass@k."""
        return self._metric("pass_at_k", k)

    def _metric(self, metric: PassMetric, k: int) -> PairedMetric:
        key = metric_key(metric, k)
        try:
            return self.metrics[key]
        except KeyError:
            have = ", ".join(self.metrics) or "none"
            raise KeyError(f"no {key} in this comparison (no case has {k} graded trials in both runs; "
                           f"metrics: {have})") from None

    @property
    def significant_new_failures(self) -> list[CaseChange]:
        """New failures that are more than chance (what the gate's ``no_new_failures`` rule decides on)."""
        return [c for c in self.changes.new_failures if c.significant]
