"""Running suites with agents that live outside the passhat process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parents[1] / "data"
NOTES = DATA / "notes"


@pytest.fixture
def notes_cases(tmp_path: Path) -> Any:
    """A copy of the notes case with extra YAML (limits, faults) appended; returns its folder."""

    def make(extra: str = "", name: str = "cases") -> Path:
        folder = tmp_path / name
        folder.mkdir()
        text = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))
        (folder / "add-note.yaml").write_text(text + extra)
        return folder

    return make


@pytest.fixture
def run_suite(tmp_path: Path) -> Any:
    """Run a suite (folder or built-in name) with an agent spec through the real runner; returns the records."""
    from passhat.agents import load_agent
    from passhat.cases import load_suite
    from passhat.llm.pricing import load_price_table
    from passhat.runner import RunConfig, RunStore, execute

    counter = iter(range(10_000))

    def go(suite: str | Path, spec: str, *, trials: int = 1, isolate: str = "none", concurrency: int = 4) -> list[Any]:
        loaded = load_suite(str(suite))
        out = tmp_path / f"run-{next(counter)}"
        agent = load_agent(spec, isolate=isolate, prices=load_price_table(None))  # type: ignore[arg-type]
        cfg = RunConfig(suite=loaded, agent=agent, agent_spec=spec, trials=trials, out=out, concurrency=concurrency)
        asyncio.run(execute(cfg))
        return sorted(RunStore(out).load(), key=lambda r: (r.case_id, r.trial))

    return go


def verdicts(records: list[Any]) -> dict[tuple[str, int], tuple[str, str | None]]:
    """(case, trial) → (outcome, failure category): what must not depend on how the agent is run."""
    return {r.key: (r.outcome, r.failure.category if r.failure else None) for r in records}
