"""Per-case tallies streamed from trial records (one pass, O(cases) memory)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from passhat.runner.records import TrialRecord


@dataclass
class CaseTally:
    """Counts and per-trial measurements of one case. Errors are neither passes nor failures."""

    case_id: str
    passes: int = 0
    fails: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    user_costs: list[float] = field(default_factory=list)
    """Cost of the model-played user per graded trial (0 for the scripted user)."""
    judge_costs: list[float] = field(default_factory=list)
    """Cost of the LLM judge per graded trial (0 without a judge)."""
    steps: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)
    failure_reasons: list[str] = field(default_factory=list)
    categories: dict[str, int] = field(default_factory=dict)
    """Failure category → trials (infrastructure errors included, under ``infrastructure_error``)."""

    @property
    def n(self) -> int:
        """Graded trials (pass + fail)."""
        return self.passes + self.fails

    def add(self, r: TrialRecord) -> None:
        if r.failure is not None:
            self.categories[r.failure.category] = self.categories.get(r.failure.category, 0) + 1
        if r.outcome == "error":
            self.errors += 1
            return
        if r.outcome == "pass":
            self.passes += 1
        else:
            self.fails += 1
            first = r.failed_grades()[:1]
            if first:
                self.failure_reasons.append(f"{first[0].name}: {first[0].reason}")
        self.latencies.append(r.timing.agent_s)
        self.costs.append(r.usage.cost)
        self.user_costs.append(r.user_usage.cost if r.user_usage else 0.0)
        self.judge_costs.append(r.judge_usage.cost if r.judge_usage else 0.0)
        self.steps.append(len(r.calls))
        self.tokens.append(r.usage.input_tokens + r.usage.output_tokens)
        if r.usage.time_to_first_token_s is not None:
            self.ttft.append(r.usage.time_to_first_token_s)


def tally(records: Iterable[TrialRecord], case_ids: Iterable[str] = ()) -> dict[str, CaseTally]:
    """Tallies for every case in ``case_ids`` (in that order, even with no records) and any other seen."""
    out = {cid: CaseTally(cid) for cid in case_ids}
    for r in records:
        out.setdefault(r.case_id, CaseTally(r.case_id)).add(r)
    return out
