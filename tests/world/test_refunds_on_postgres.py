"""The built-in refunds cases, unchanged, on a PostgreSQL copy of the refunds fixture with the refunds
domain's own native tools: every trial's verdict and diff is the one the in-memory SQLite world gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import passhat
from passhat.domains.refunds import HERE as REFUNDS

PG_DOMAIN = Path(__file__).resolve().parents[1] / "data" / "refunds_pg" / "domain.py"


@pytest.fixture(scope="module")
def pg_cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The refunds case files as they are, but for the line naming their domain."""
    folder = tmp_path_factory.mktemp("refunds_pg_cases")
    for case in sorted((REFUNDS / "cases").glob("*.yaml")):
        data = yaml.safe_load(case.read_text())
        assert data["domain"] == "refunds"
        (folder / case.name).write_text(case.read_text().replace("domain: refunds\n", f"domain: {PG_DOMAIN}\n", 1))
    return folder


def verdicts(run: Any) -> dict[tuple[str, int], tuple[Any, ...]]:
    """Per trial: outcome, grades, failure attribution (category, step), and the row diff."""
    return {(r.case_id, r.trial): (r.outcome, [(g.name, g.passed) for g in r.grades if g.grader != "rules"],
                                   r.failure and (r.failure.category, r.failure.step), r.diff)
            for r in run.records()}


@pytest.mark.parametrize("agent", ["careful", "hasty", "flaky"])
def test_refunds_cases_give_the_same_verdicts_on_postgres(pg: Any, pg_cases: Path, agent: str, tmp_path: Path) -> None:
    sqlite = passhat.evaluate("refunds", agent, trials=1, seed=3, out=tmp_path / "sqlite", sanity=False)
    postgres = passhat.evaluate(pg_cases, agent, trials=1, seed=3, out=tmp_path / "pg", sanity=False)
    a, b = verdicts(sqlite), verdicts(postgres)
    assert len(a) == len(list((REFUNDS / "cases").glob("*.yaml")))
    assert {k: v[:3] for k, v in b.items()} == {k: v[:3] for k, v in a.items()}
    assert {k: v[3] for k, v in b.items()} == {k: v[3] for k, v in a.items()}
    if agent == "careful":
        assert {v[0] for v in a.values()} == {"pass"}
    if agent == "hasty":
        assert "fail" in {v[0] for v in a.values()}  # the comparison covers failures too
