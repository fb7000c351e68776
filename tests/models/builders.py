"""Small, valid run-file models for tests of their readers (the reports, the terminal, CI outputs).

A reader takes the model, never a hand-made dict: these build the fewest fields a model requires, so a
test states only the numbers it is about.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from passhat.models import CaseMeta, CaseSummary, Interval, Manifest, SuiteInfo, SuiteSummary, Summary
from passhat.models.summary import Bootstrap

Model = TypeVar("Model", bound=BaseModel)


def summary_of(cases: Sequence[tuple[int, int, int]], k: int, *, est: float | None = 1.0, low: float = 0.7938,
               high: float = 1.0, agent: str = "careful", name: str = "s", ids: Sequence[str] = ()) -> Summary:
    """A summary of cases given as (n, successes, errors), named ``ids`` (default c0, c1, …), with the suite's
    pass^k as ``est`` [``low``, ``high``] (``est=None``: no case has k graded trials)."""
    names = list(ids) or [f"c{i}" for i in range(len(cases))]
    rows = [CaseSummary(id=cid, n=n, successes=c, errors=e) for cid, (n, c, e) in zip(names, cases, strict=True)]
    curve = {} if est is None else {k: Interval(estimate=est, ci_low=low, ci_high=high)}
    suite = SuiteSummary(name=name, hash="0" * 64, trials_per_case=k, confidence=0.95, cases=len(cases),
                         bootstrap=Bootstrap(seed=0, resamples=2000, unit="case"), trials=sum(n for n, _, _ in cases),
                         errors=sum(e for _, _, e in cases), pass_hat_k=curve)
    return Summary(agent=agent, cases=rows, suite=suite)


def manifest_of(case_ids: Sequence[str], trials: int, *, agent: str = "a", tags: Sequence[dict[str, str]] = (),
                validate: bool = True) -> Manifest:
    """The manifest of a run of ``case_ids`` (tags per case, in order, when given). ``validate=False`` keeps the
    ids as given (a ``str`` subclass that counts its hashes stays one), as pydantic would make them ``str``."""
    meta = [_build(CaseMeta, validate, tags=dict(t)) for t in tags] or [_build(CaseMeta, validate) for _ in case_ids]
    suite = _build(SuiteInfo, validate, name="s", hash="h", cases=dict.fromkeys(case_ids, "x"),
                   case_meta=dict(zip(case_ids, meta, strict=True)))
    return _build(Manifest, validate, suite=suite, agent=agent, trials=trials, seed=0, status="complete")


def _build(model: type[Model], validate: bool, **fields: Any) -> Model:
    return model(**fields) if validate else model.model_construct(**fields)
