"""Verdict parity: the built-in ``refunds`` desk re-written as an MCP server of ours over PostgreSQL
(examples/upstream/refunds_pg) gives the built-in domain's outcome on every case and trial, for the
careful and hasty reference agents at k = 2 and the flaky one at k = 4 (its lapses need the trials), with
the same seed — through the proxy, with every fault kind (the refunds cases plan all five) and the
permission case."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import passhat
from passhat.cases import load_suite
from passhat.domain import load_domain

EXAMPLE = Path(__file__).parents[2] / "examples" / "upstream" / "refunds_pg"


def outcomes(run: Any) -> dict[tuple[str, int], tuple[str, list[str]]]:
    """Each trial's outcome and the names of its failed required checks."""
    return {(r.case_id, r.trial): (r.outcome, sorted(g.name for g in r.failed_grades())) for r in run.records()}


@pytest.fixture(scope="module")
def suites() -> tuple[Any, Any]:
    pytest.importorskip("psycopg", reason="the refunds_pg server needs psycopg: pip install 'passhat[postgres]'")
    builtin = load_suite("refunds")
    domain = load_domain(str(EXAMPLE / "domain.py"))
    assert domain.name == "refunds" and sorted(domain.tools) == sorted(builtin.domains["refunds"].tools)
    upstream = dataclasses.replace(builtin, domains={"refunds": domain})
    return builtin, upstream


@pytest.mark.parametrize("agent", ["careful", "hasty", "flaky"])
def test_the_refunds_desk_over_mcp_and_postgresql_gives_the_builtin_verdicts(agent: str, suites: tuple[Any, Any],
                                                                            tmp_path: Path) -> None:
    builtin, upstream = suites
    trials = 4 if agent == "flaky" else 2  # careful and hasty: trial 2 already has other seeded world data
    runs = [passhat.evaluate(suite, agent, trials=trials, seed=0, concurrency=8, sanity=False, out=tmp_path / name)
            for name, suite in (("builtin", builtin), ("upstream", upstream))]
    expected, got = (outcomes(run) for run in runs)
    assert len(got) == 16 * trials and not [k for k, (o, _) in got.items() if o == "error"]
    assert got == expected
    fails = sum(o == "fail" for o, _ in got.values())
    assert (fails == 0) if agent == "careful" else (fails > 0)  # the comparison is not between two empty sets
    calls = [c for r in runs[1].records() for c in r.calls]
    assert {c.fault_kind for c in calls if c.fault} == {"drop_response", "timeout", "error", "malformed", "latency"}
    if agent == "hasty":
        assert any(c.status == "denied" for c in calls)  # the friend's order, refused by the server
