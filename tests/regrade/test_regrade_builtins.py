"""A re-grade with nothing changed reproduces every verdict, on every built-in suite: the careful agent's
passes and the hasty agent's fails alike (redacted records included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from passhat import evaluate
from passhat.cases import load_suite
from passhat.domain import BUILTIN_DOMAINS
from passhat.regrade.run import regrade_run

FEW = 3
"""Cases per suite: the bugfix suite runs real test commands, so each case costs a second of CPU."""


@pytest.mark.parametrize("suite", BUILTIN_DOMAINS)
def test_an_unchanged_suite_regrades_to_the_same_verdicts(suite: str, tmp_path: Path) -> None:
    cases = [c.id for c in load_suite(suite).cases][:FEW]
    outcomes = set()
    for agent in ("careful", "hasty"):
        run = evaluate(suite, agent, trials=1, concurrency=2, out=tmp_path / agent, cases=cases, sanity=False)
        outcomes |= {r.outcome for r in run.records()}
        report = regrade_run(tmp_path / agent, tmp_path / f"{agent}-regraded")
        assert report.trials == len(cases) and report.outcome_changes == [], (agent, report.outcome_changes)
    assert outcomes == {"pass", "fail"}  # both verdicts were there to reproduce


def test_only_a_grade_that_read_redacted_text_keeps_the_runs_grade() -> None:
    """A disagreement that redaction did not cause (a grader changed with passhat) is the regrade's to show."""
    from passhat.graders import Grade
    from passhat.regrade.record import _keep_where_redacted

    run = [Grade(grader="state", name="s", passed=True, reason="ok"), Grade(grader="reply", name="r", passed=True, reason="ok"),
           Grade(grader="state", name="t", passed=True, reason="ok")]
    new = [Grade(grader="state", name="s", passed=False, reason="expected a@b.c, actual [REDACTED:email]"),
           Grade(grader="reply", name="r", passed=False, reason="reply does not contain '327'"),
           Grade(grader="state", name="t", passed=False, reason="expected 40.0, actual 95.0")]
    kept = _keep_where_redacted(new, run, replies_redacted=True)
    assert [g.passed for g in kept] == [True, True, False]
    assert kept[0].details["kept_because_redacted"] and "kept_because_redacted" not in kept[2].details
    assert [g.passed for g in _keep_where_redacted(new, run, replies_redacted=False)] == [True, False, False]
