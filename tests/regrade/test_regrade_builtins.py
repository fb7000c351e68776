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
        assert report["trials"] == len(cases) and report["outcome_changes"] == [], (agent, report["outcome_changes"])
    assert outcomes == {"pass", "fail"}  # both verdicts were there to reproduce
