"""``summary.json``: per-case and suite pass^k / pass@k for every k, with intervals (``results.summary`` builds it).

``Summary.suite.pass_hat_k[4]`` is the suite's pass^4 as an :class:`Interval` (``.estimate``, ``.low``,
``.high``); ``Summary.cases`` holds one :class:`CaseSummary` per case. See docs/statistics.md for how
each number is computed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.models.files import FileModel
from passhat.models.finite import STRICT_FLOATS
from passhat.models.manifest import SequentialRecord

_DOCS = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS, frozen=True)
"""Summaries are derived data: immutable once built or read."""


class Interval(BaseModel):
    """A suite value with its two-sided interval over cases (Gaffke's bounds; docs/statistics.md).

    On disk the bounds are ``ci_low`` and ``ci_high``; ``low`` and ``high`` are the same numbers.
    """

    model_config = _DOCS
    estimate: float | None
    """The unweighted mean over the cases with at least k graded trials (None when no case has k)."""
    ci_low: float | None = None
    """Lower end of the interval."""
    ci_high: float | None = None
    """Upper end of the interval."""
    method: str | None = None
    """``gaffke`` (summaries written before issue 22: ``bca_pseudocase`` or ``pseudocase``; docs/statistics.md)."""
    cases: int = 0
    """Cases the value averages over."""
    units: int = 0
    """Independent units among them (a group of cases counts once)."""
    excluded: list[str] = Field(default_factory=list)
    """Cases with fewer than k graded trials, left out of this k (never counted as failures)."""
    fixed_suite_se: float | None = None
    """Standard error for these very cases (needs n ≥ 2k trials), as opposed to new cases like them."""

    @property
    def low(self) -> float | None:
        """Lower end of the interval (``ci_low``)."""
        return self.ci_low

    @property
    def high(self) -> float | None:
        """Upper end of the interval (``ci_high``)."""
        return self.ci_high

    def __repr__(self) -> str:
        if self.estimate is None:
            return "Interval(no case has enough trials)"
        return (f"Interval({self.estimate:.3f} [{_f(self.ci_low)}, {_f(self.ci_high)}] over {self.cases} case(s), "
                f"{self.method})")

    __str__ = __repr__


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


class Distribution(BaseModel):
    """A per-trial measurement summarized (latency, cost, tokens, steps)."""

    model_config = _DOCS
    n: int
    """Trials measured."""
    mean: float
    """Arithmetic mean."""
    p50: float
    """Median."""
    p95: float
    """95th percentile (linear interpolation, numpy's default)."""
    max: float
    """Largest value."""


class Experience(BaseModel):
    """What a user of the agent would feel and pay, over every graded trial."""

    model_config = _DOCS
    latency_s: Distribution | None = None
    """End-to-end seconds inside the agent, tools and user simulator included."""
    ttft_s: Distribution | None = None
    """Time to first token, when the agent reports it."""
    cost_per_trial: Distribution | None = None
    """The agent's cost per trial (USD)."""
    tokens_per_trial: Distribution | None = None
    """Input plus output tokens per trial."""
    steps_per_trial: Distribution | None = None
    """Tool calls per trial."""
    total_cost: float = 0.0
    """Agent, model-played user and judge together."""
    cost_per_success: float | None = None
    """Total cost over passing trials (None with no success)."""
    cost_by_role: dict[str, float] = Field(default_factory=dict)
    """``agent``, ``user``, ``judge`` → cost."""
    cost_per_success_by_role: dict[str, float | None] = Field(default_factory=dict)
    """The same per passing trial."""


class Bootstrap(BaseModel):
    """How the suite intervals were resampled: seeded, so the same run always reports the same intervals."""

    model_config = _DOCS
    seed: int
    """The bootstrap seed (the run seed unless told otherwise)."""
    resamples: int
    """Bootstrap resamples."""
    unit: str
    """What is resampled (cases; a group of cases whole)."""


class StratumSummary(BaseModel):
    """Suite-level figures for a set of cases: the whole suite, or the cases with one tag value."""

    model_config = _DOCS
    cases: int
    """Cases counted."""
    trials: int
    """Graded trials (pass or fail)."""
    errors: int
    """Trials that ended in infrastructure errors: neither passes nor failures."""
    pass_hat_k: dict[int, Interval] = Field(default_factory=dict)
    """k → pass^k: the chance that k trials of a case all pass, averaged over cases."""
    pass_at_k: dict[int, Interval] = Field(default_factory=dict)
    """k → pass@k: the chance that at least one of k trials passes, averaged over cases."""
    experience: Experience = Field(default_factory=Experience)
    """Latency, cost, tokens and steps."""
    failure_categories: dict[str, int] = Field(default_factory=dict)
    """Failure category → trials, commonest first (``infrastructure_error`` included)."""


class SuiteSummary(StratumSummary):
    """The whole run's figures."""

    name: str
    """The suite's name."""
    hash: str
    """The suite's content hash (as in the manifest)."""
    trials_per_case: int
    """Trials planned per case."""
    confidence: float
    """Level of every two-sided interval."""
    bootstrap: Bootstrap
    """How the suite intervals were resampled."""
    replayed_trials: int = 0
    """Trials whose external tools were answered from a cassette, not the real services."""
    split: str | None = None
    """Set when the summary covers only the cases of this split (``passhat show --split``)."""


class CaseSummary(BaseModel):
    """One case: its counts, its pass^k and pass@k curves and the Wilson interval on its pass rate."""

    model_config = _DOCS
    id: str
    """The case id."""
    n: int
    """Graded trials (pass + fail)."""
    successes: int
    """Passing trials."""
    errors: int
    """Infrastructure errors (retried once; what remains is neither pass nor fail)."""
    pass_hat_k: dict[int, float] = Field(default_factory=dict)
    """k → C(c,k)/C(n,k), for k = 1..n."""
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    """k → 1 − C(n−c,k)/C(n,k), for k = 1..n."""
    wilson_low: float | None = None
    """Lower end of the 95 % Wilson interval on the per-trial pass rate (None without a graded trial)."""
    wilson_high: float | None = None
    """Upper end of that interval."""
    tags: dict[str, str] = Field(default_factory=dict)
    """The case's tags."""
    group: str | None = None
    """Its family of cases (resampled together), if any."""
    split: str | None = None
    """``dev``, ``holdout`` or ``regression``."""
    latency_s: Distribution | None = None
    """Seconds inside the agent per graded trial."""
    cost: Distribution | None = None
    """The agent's cost per graded trial."""
    steps: Distribution | None = None
    """Tool calls per graded trial."""
    top_failure: str | None = None
    """The commonest first failing check, ``name: reason`` (ties: the one seen first)."""
    top_failure_trial: int | None = None
    """The first trial that failed that way: its record holds the whole story (older summaries do not say)."""
    failure_categories: dict[str, int] = Field(default_factory=dict)
    """Failure category → trials."""
    replayed: int = 0
    """Trials answered from a cassette."""
    faults_not_applied: dict[str, int] = Field(default_factory=dict)
    """``fault: why it did not apply`` → trials in which a planned fault changed nothing (a ``malformed``
    field the result did not hold, a fault on a call that failed anyway): those trials did not test it."""
    faults_not_reached: dict[str, int] = Field(default_factory=dict)
    """Planned fault → graded trials in which no call reached it (the agent made fewer calls of the tool than
    ``on_call``, or they were refused before the fault's turn): those trials did not test it either. Counted
    against the faults the manifest records for the case (``case_meta.faults``), so a run whose manifest
    predates them counts none."""

    @property
    def failed(self) -> int:
        """Graded trials that failed."""
        return self.n - self.successes

    @property
    def passed_every_trial(self) -> bool:
        """At least one graded trial, and every one passed."""
        return self.n > 0 and self.successes == self.n


class Summary(FileModel):
    """``summary.json``: the run's numbers, recomputable at any time from ``trials.jsonl``. Immutable."""

    model_config = ConfigDict(frozen=True)

    REMEDY = ("it is derived from trials.jsonl: `passhat show RUN` recomputes it, "
              "`passhat.Run.open(RUN).summarize()` rewrites it")
    UNVERSIONED_IS_CURRENT = False  # summaries before /3 said "format": "passhat.summary/2"

    schema_version: Literal["passhat.summary/3"] = "passhat.summary/3"
    """``passhat.summary/3`` (2 was the same numbers under the key ``format``; 1 had narrower intervals)."""
    suite: SuiteSummary
    """Suite-level figures."""
    agent: str
    """The agent, as in the manifest."""
    cases: list[CaseSummary] = Field(default_factory=list)
    """One entry per case, in run order."""
    strata: dict[str, dict[str, StratumSummary]] = Field(default_factory=dict)
    """Tag (or ``split``, ``group``) → value → the suite figures over the cases with that value."""
    trials_bytes: int | None = Field(default=None, ge=0)
    """Size of trials.jsonl, in bytes, when this summary was computed from it (taken before reading): the
    summary is current while the file keeps this size and is not newer. None in summaries built in memory
    or by an older passhat; those are checked by counting the records."""
    sequential: SequentialRecord | None = None
    """For a sequential run: its design, looks and where it stopped (as in the manifest), so a reader of the
    summary knows its intervals are repeated confidence intervals at ``stopped.confidence``."""

    def case(self, case_id: str) -> CaseSummary:
        """The entry of one case; ``KeyError`` naming the known ids otherwise."""
        for c in self.cases:
            if c.id == case_id:
                return c
        raise KeyError(f"no case {case_id!r} in this summary (cases: {', '.join(c.id for c in self.cases)})")
