"""The LLM judge grader: for what code cannot decide, calibrated against people, failing closed.

Opt-in per case (a ``judge:`` rubric); the model is chosen per run. Each criterion becomes one grade
(``judge: NAME``). The judge runs pinned (temperature 0 by default, a seed derived from the trial's),
its model, prompt hash, temperature and seed are recorded in every grade and the manifest, and its
tokens and cost go to the record's ``judge_usage``. An answer that cannot be parsed, omits a criterion
or scores out of range fails that criterion with the reason; "cannot judge" is a valid answer that also
fails (a grader that cannot decide never passes) but is recorded as such, so calibration can count it.
Pairwise mode compares two trials in both orders and calls a tie when the orders disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from passhat.cases.assertions import CustomAssertion
from passhat.cases.rubric import JudgeSpec
from passhat.episode import Usage
from passhat.errors import InfrastructureError
from passhat.graders.base import Grade, TrialView
from passhat.graders.custom import TrialJudge, run_judge_grader
from passhat.graders.declare import CustomGrader
from passhat.graders.judge_prompt import (
    CriterionVerdict,
    Evidence,
    build_pairwise_prompt,
    build_prompt,
    parse_answer,
    parse_preference,
    prompt_hash,
)
from passhat.llm.accounting import add_reply
from passhat.llm.chat import CallOptions, ChatMessage, ChatModel
from passhat.llm.pricing import PriceTable

if TYPE_CHECKING:
    from passhat.cases.model import Case

NO_JUDGE = "the case has a judge: section but this run has no judge model (pass --judge openai:MODEL or anthropic:MODEL)"


@dataclass(frozen=True)
class JudgeSettings:
    """Pinned sampling settings of the judge (recalibrate when any of them changes)."""

    temperature: float | None = 0.0
    max_tokens: int | None = 2048
    send_seed: bool = True
    json_answer: bool = False
    """Ask for JSON mode where the API has one (the answer is validated either way)."""


@dataclass
class Judged:
    """The judge's grades for one trial and what judging cost."""

    grades: list[Grade]
    usage: Usage
    verdicts: dict[str, CriterionVerdict] = field(default_factory=dict)
    answer: str = ""


Preference = Literal["A", "B", "tie", "invalid"]


@dataclass
class PairwiseVerdict:
    """Two trials compared in both orders. ``winner`` holds only if both orders agree, else ``tie``."""

    winner: Preference
    first_order: Preference
    """Verdict with A shown first."""
    second_order: Preference
    """Verdict with B shown first (mapped back to A/B)."""
    usage: Usage

    @property
    def swap_consistent(self) -> bool:
        return self.first_order == self.second_order and self.first_order != "invalid"


class Judge:
    """A judge model with pinned settings."""

    def __init__(self, model: ChatModel, settings: JudgeSettings | None = None, prices: PriceTable | None = None) -> None:
        self.model = model
        self.settings = settings or JudgeSettings()
        self.prices = prices or PriceTable()
        self.prompt_hash = prompt_hash()

    @property
    def spec(self) -> str:
        return f"{self.model.provider}:{self.model.model}"

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {"spec": self.spec, **self.model.describe(), "temperature": s.temperature, "max_tokens": s.max_tokens,
                "seed": "per trial: derived from the trial seed" if s.send_seed else None,
                "prompt_hash": self.prompt_hash, "price": self.prices.describe([self.model.model])[self.model.model]}

    def _pins(self, seed: int | None) -> dict[str, Any]:
        return {"judge_model": self.spec, "prompt_hash": self.prompt_hash, "temperature": self.settings.temperature,
                "seed": seed if self.settings.send_seed else None}

    async def ask(self, system: str, prompt: str, seed: int | None, usage: Usage) -> str:
        """One judge call; its tokens and cost are added to ``usage``."""
        s = self.settings
        options = CallOptions(temperature=s.temperature, seed=seed if s.send_seed else None, max_tokens=s.max_tokens,
                              json_answer=s.json_answer)
        reply = await self.model.complete(system, [ChatMessage(role="user", text=prompt)], [], options)
        add_reply(usage, reply, self.prices, self.model.model)
        return reply.text

    async def judge(self, rubric: JudgeSpec, evidence: Evidence, seed: int | None = None) -> Judged:
        """Grade one trial against the rubric: one grade per criterion."""
        usage = Usage()
        system, prompt = build_prompt(rubric, evidence)
        try:
            answer = await self.ask(system, prompt, seed, usage)
        except InfrastructureError:
            raise
        except Exception as exc:  # the judge's own failure fails closed, with the reason
            return Judged(_failed(rubric, f"judge call failed: {type(exc).__name__}: {exc}", self._pins(seed)), usage)
        parsed = parse_answer(answer, rubric)
        grades = []
        for c in rubric.criteria:
            v = parsed.verdicts[c.name]
            details = {**self._pins(seed), "verdict": v.status, "score": v.score, "evidence": v.evidence[:1000],
                       "pass_score": c.threshold, "answer": answer[:2000]}
            if parsed.unexpected:
                details["unexpected_criteria"] = parsed.unexpected
            if v.status == "scored":
                assert v.score is not None
                passed = v.score >= c.threshold
                reason = f"score {v.score} of {c.low}-{c.high} (passes at {c.threshold}): {v.evidence[:300]}"
            elif v.status == "cannot_judge":
                passed, reason = False, f"the judge could not judge: {v.reason}"
            else:
                passed, reason = False, v.reason
            grades.append(Grade(grader="judge", name=f"judge: {c.name}", passed=passed, reason=reason,
                                required=c.required, score=v.score, details=details))
        return Judged(grades, usage, parsed.verdicts, answer)

    async def compare(
        self, rubric: JudgeSpec, a: Evidence, b: Evidence, seed: int | None = None, mask: tuple[str, ...] = ()
    ) -> PairwiseVerdict:
        """Judge A vs B in both orders (position bias shows up as disagreement, reported as a tie)."""
        usage = Usage()
        verdicts: list[Preference] = []
        orders: tuple[tuple[Evidence, Evidence, tuple[Preference, Preference]], ...] = ((a, b, ("A", "B")), (b, a, ("B", "A")))
        for first, second, labels in orders:
            system, prompt = build_pairwise_prompt(rubric, first, second, mask)
            try:
                pref = parse_preference(await self.ask(system, prompt, seed, usage))
            except InfrastructureError:
                raise
            except Exception:
                pref = None
            verdict: Preference = "invalid" if pref is None else "tie" if pref == "tie" else labels[int(pref) - 1]
            verdicts.append(verdict)
        one, two = verdicts
        winner: Preference = "invalid" if "invalid" in verdicts else one if one == two else "tie"
        return PairwiseVerdict(winner, one, two, usage)


def _failed(rubric: JudgeSpec, reason: str, details: dict[str, Any]) -> list[Grade]:
    return [Grade(grader="judge", name=f"judge: {c.name}", passed=False, reason=reason, required=c.required,
                  details={**details, "verdict": "invalid"}) for c in rubric.criteria]


def judge_assertions(view: TrialView) -> list[tuple[CustomAssertion, CustomGrader]]:
    """The case's assertions on custom judge graders (model-based), with their graders."""
    return judge_grader_assertions(view.case, view.graders)


def judge_grader_assertions(case: Case, graders: Mapping[str, CustomGrader]) -> list[tuple[CustomAssertion, CustomGrader]]:
    """A case's assertions on the custom judge graders among its domain's ``graders``, with their graders (a run
    says before its first trial which cases have some and no judge model to grade them)."""
    out = []
    for a in case.assertions:
        if not isinstance(a, CustomAssertion):
            continue
        g = graders.get(a.kind)
        if g is not None and g.uses_judge:
            out.append((a, g))
    return out


def needs_judge(view: TrialView) -> bool:
    """Whether grading this trial involves the judge model: a ``judge:`` rubric or a custom judge grader."""
    return view.case.judge is not None or bool(judge_assertions(view))


async def judge_trial(view: TrialView, judge: Judge | None, *, policy: str = "", seed: int | None = None) -> Judged:
    """The model-based grades of a finished trial: the ``judge:`` rubric's criteria, then each assertion on a
    custom judge grader (the runner awaits this when :func:`needs_judge`). Without a judge model every one
    of them fails with the reason; the judge's spending on all of them is in the result's ``usage``."""
    rubric = view.case.judge
    judged = Judged([], Usage())
    if rubric is not None and judge is None:
        judged = Judged(_failed(rubric, NO_JUDGE, {}), Usage())
    elif rubric is not None and judge is not None:
        evidence = Evidence(messages=list(view.messages), calls=list(view.calls), changes=view.diff.to_json(),
                            policy=policy)
        judged = await judge.judge(rubric, evidence, seed)
    bound = TrialJudge(judge, seed, judged.usage) if judge is not None else None
    for a, g in judge_assertions(view):
        judged.grades.append(await run_judge_grader(view, a, g, bound))
    return judged


def pairwise_summary(verdicts: list[PairwiseVerdict]) -> dict[str, Any]:
    """Wins, ties, invalid answers and the swap-consistency rate over many comparisons."""
    valid = [v for v in verdicts if "invalid" not in (v.first_order, v.second_order)]
    consistent = sum(v.swap_consistent for v in valid)
    return {
        "pairs": len(verdicts),
        "a_wins": sum(v.winner == "A" for v in verdicts),
        "b_wins": sum(v.winner == "B" for v in verdicts),
        "ties": sum(v.winner == "tie" for v in verdicts),
        "invalid": len(verdicts) - len(valid),
        "swap_consistency": consistent / len(valid) if valid else None,
        "cost": sum(v.usage.cost for v in verdicts),
    }
