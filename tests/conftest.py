"""Shared fixtures: the tiny ``notes`` domain in tests/data/notes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"
NOTES = DATA / "notes"


@pytest.fixture
def notes_domain() -> Any:
    from passhat.domain import load_domain

    return load_domain(str(NOTES / "domain.py"))


@pytest.fixture
def run_notes(tmp_path: Path) -> Any:
    """Run the notes suite with an agent from tests/data/notes/agents.py; returns the run folder."""
    from passhat.agents import python_agent
    from passhat.cases import load_suite
    from passhat.runner import RunConfig, execute

    def go(agent: str, trials: int = 2, cases: Path | None = None, **kw: Any) -> Path:
        suite = load_suite(str(cases or NOTES / "cases"))
        out = tmp_path / f"run-{agent}"
        cfg = RunConfig(suite=suite, agent=python_agent(f"{NOTES / 'agents.py'}:{agent}"), agent_spec=agent,
                        trials=trials, out=out, **kw)
        asyncio.run(execute(cfg))
        return out

    return go
