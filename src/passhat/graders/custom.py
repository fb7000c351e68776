"""Running custom graders, failing closed.

A registered grader is user code: it may raise, return something that is not a verdict, or be given
parameters that no longer fit it (a case built in code, a domain changed since the suite loaded). Each
of these becomes a failed grade whose reason says what happened, never a pass and never a crashed run.
The one exception is :class:`~passhat.errors.InfrastructureError` from a judge grader (the judge's
provider kept failing): like the built-in judge, the trial is then an infrastructure ``error``, retried,
never the agent's failure.
"""

from __future__ import annotations

import inspect
import math
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from passhat.cases.assertions import CustomAssertion
from passhat.episode import Usage
from passhat.errors import InfrastructureError
from passhat.graders.base import Grade, TrialView
from passhat.graders.declare import CustomGrader
from passhat.graders.judge_prompt import _nonce, encode_data, load_single_object, markers
from passhat.models.finite import non_finite_field
from passhat.validation import field_path

if TYPE_CHECKING:
    from passhat.graders.judge import Judge

NO_JUDGE = ("grader {name!r} asks the judge model, but this run has no judge model "
            "(pass --judge openai:MODEL or anthropic:MODEL)")


@dataclass(frozen=True)
class Verdict:
    """What a custom grader returns when it has more to say than ``(passed, reason)``."""

    passed: bool
    reason: str
    """Why, in words a person can act on (expected vs actual)."""
    score: float | None = None
    step: int | None = None
    """The tool-call step where it went wrong, if there is one (failure attribution reports it)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Anything else worth keeping in the trial record (JSON-serialisable)."""


class TrialJudge:
    """The run's judge model as a judge grader sees it, bound to one trial.

    ``await judge.ask(prompt)`` returns the model's text. The run's pinned settings apply (temperature,
    token limit, the trial's judge seed), and the tokens and cost go to the trial's ``judge_usage``.
    """

    def __init__(self, judge: Judge, seed: int | None, usage: Usage) -> None:
        self._judge = judge
        self.seed = seed
        self.usage = usage

    @property
    def spec(self) -> str:
        """``provider:model`` of the judge."""
        return self._judge.spec

    async def ask(self, prompt: str, *, system: str = "") -> str:
        """One call to the judge model; its answer's text."""
        return await self._judge.ask(system, prompt, self.seed, self.usage)

    @staticmethod
    def quote(payload: Any, tag: str = "DATA") -> str:
        """``payload`` as JSON between marker lines that no text inside it can forge (``<`` and ``>`` are
        escaped; the markers carry a nonce derived from the data). Put what the agent or user wrote in a
        prompt this way, and tell the model that text between the markers is data, never instructions."""
        data = encode_data(payload)
        open_, close = markers(tag, _nonce(tag, data))
        return f"{open_}\n{data}\n{close}"

    @staticmethod
    def answer_object(text: str) -> dict[str, Any]:
        """The answer as exactly one JSON object (a whole-answer ``` fence allowed); ``ValueError``
        otherwise, which fails the grade (a verdict is never picked out of a chatty answer)."""
        return load_single_object(text)

    def pins(self) -> dict[str, Any]:
        s = self._judge.settings
        return {"judge_model": self.spec, "temperature": s.temperature, "seed": self.seed if s.send_seed else None}


def _failed(a: CustomAssertion, grader_kind: Any, reason: str, **details: Any) -> Grade:
    return Grade(grader=grader_kind, name=a.label(), passed=False, reason=reason, required=a.required,
                 details={**details, "custom_grader": a.kind, "params": a.params})


def _arguments(a: CustomAssertion, g: CustomGrader) -> dict[str, Any]:
    """The case's parameters validated against the grader (as at load time); ``ValueError`` if they do not fit."""
    try:
        params = g.params.model_validate(a.params)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"parameters do not fit {g.signature()}: {field_path(first['loc'])}: {first['msg']}") from None
    return {name: getattr(params, name) for name in g.params.model_fields}


def _verdict(result: Any) -> tuple[bool, str, float | None, dict[str, Any]]:
    """(passed, reason, score, details) from what a grader returned; ``ValueError`` if it is not a verdict,
    or if its score or details hold a NaN or an infinite number (the trial record is JSON, which has neither:
    such a grade fails, saying so, rather than being recorded as a ``null`` score nobody gave)."""
    passed, reason, score, details = _parts(result)
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score)):
        raise ValueError(f"the grader returned score {score!r}; a score is a finite number (or None for no score)")
    bad = non_finite_field(details, "details")
    if bad is not None:
        raise ValueError(f"the grader returned {bad} as NaN or infinity; NaN and infinity are not JSON numbers, "
                         "and the trial record is JSON (give None, or the number as text)")
    return passed, reason, score, details


def _parts(result: Any) -> tuple[bool, str, Any, dict[str, Any]]:
    """(passed, reason, score, details) as the grader returned them; ``ValueError`` if it is not a verdict."""
    if isinstance(result, Verdict) and isinstance(result.passed, bool) and isinstance(result.reason, str):
        step = {} if result.step is None else {"step": result.step}
        return result.passed, result.reason, result.score, {**result.details, **step}
    if isinstance(result, Grade):
        return result.passed, result.reason, result.score, dict(result.details)
    if isinstance(result, bool):
        return result, f"the grader returned {result} (it gave no reason)", None, {}
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool) and isinstance(result[1], str):
        return result[0], result[1], None, {}
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()  # never awaited: say so instead of a RuntimeWarning
        raise ValueError("the grader returned an awaitable; only judge graders are async (kind='judge')")
    shown = repr(result)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    raise ValueError(f"the grader returned {type(result).__name__} {shown}; expected True/False, (passed, reason), "
                     "a Verdict or a Grade")


def _raised(exc: BaseException) -> tuple[str, dict[str, Any]]:
    return f"the grader raised {type(exc).__name__}: {exc}", {"traceback": traceback.format_exc()[-2000:]}


def _grade(a: CustomAssertion, g: CustomGrader, result: Any) -> Grade:
    try:
        passed, reason, score, details = _verdict(result)
    except ValueError as exc:
        return _failed(a, g.kind, str(exc))
    return Grade(grader=g.kind, name=a.label(), passed=passed, reason=reason, score=score, required=a.required,
                 details={**details, "custom_grader": g.name, "params": a.params})


def run_grader(view: TrialView, a: CustomAssertion, g: CustomGrader) -> Grade:
    """Grade one assertion with a (synchronous) state, trajectory or reply grader."""
    try:
        arguments = _arguments(a, g)
    except ValueError as exc:
        return _failed(a, g.kind, str(exc))
    try:
        result = g.func(view, **arguments)
    except (Exception, SystemExit) as exc:  # user code: whatever it raises fails this grade, not the run
        reason, details = _raised(exc)
        return _failed(a, g.kind, reason, **details)
    return _grade(a, g, result)


async def run_judge_grader(view: TrialView, a: CustomAssertion, g: CustomGrader, judge: TrialJudge | None) -> Grade:
    """Grade one assertion with an async judge grader; without a judge model it fails without being called.

    Like the rubric's criteria, the grade's ``details["verdict"]`` is ``scored`` when the grader gave a
    verdict and ``invalid`` when it failed closed (calibration counts only the former as decided).
    """
    if judge is None:
        return _failed(a, "judge", NO_JUDGE.format(name=g.name), verdict="invalid")
    try:
        arguments = _arguments(a, g)
    except ValueError as exc:
        return _failed(a, "judge", str(exc), **judge.pins(), verdict="invalid")
    try:
        result = await g.func(view, judge=judge, **arguments)
    except InfrastructureError:  # the judge's provider kept failing: the trial is an `error`, retried
        raise
    except (Exception, SystemExit) as exc:
        reason, details = _raised(exc)
        return _failed(a, "judge", reason, **details, **judge.pins(), verdict="invalid")
    try:
        passed, reason, score, details = _verdict(result)
    except ValueError as exc:
        return _failed(a, "judge", str(exc), **judge.pins(), verdict="invalid")
    scored = {} if score is None else {"score": score}
    return Grade(grader="judge", name=a.label(), passed=passed, reason=reason, score=score, required=a.required,
                 details={**details, **judge.pins(), "verdict": "scored", **scored, "custom_grader": g.name,
                          "params": a.params})


def unknown_grader(view: TrialView, a: CustomAssertion) -> Grade:
    """An assertion naming a grader the domain does not register: failed, never skipped (the loader
    refuses such cases, so this is reached only by cases built in code or graded against another domain)."""
    known = ", ".join(sorted(view.graders)) or "none"
    return _failed(a, "state", f"no grader {a.kind!r} is registered on this domain (graders: {known}); "
                               "the assertion cannot be evaluated")


CARRIED = "carried over from the source run (a re-grade has no judge model)"


def carried_judge_grade(a: CustomAssertion, stored: list[Grade]) -> Grade:
    """For a re-grade: the stored grade of this judge assertion (taken out of ``stored``), or a failed one."""
    name = a.label()
    for i, g in enumerate(stored):
        if g.name == name and g.details.get("custom_grader") == a.kind and g.details.get("params") == a.params:
            del stored[i]
            return g.model_copy(update={"details": {**g.details, "regrade": CARRIED}})
    return _failed(a, "judge", f"grader {a.kind!r} asks the judge model and the source run has no grade for this "
                               "assertion to carry over (a re-grade has no judge model)", verdict="invalid")
