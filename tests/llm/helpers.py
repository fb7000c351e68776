"""What the model-driven tests share (imported as ``tests.llm.helpers``; fixtures stay in conftest.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from passhat.llm import PriceTable, RetryPolicy
from passhat.llm.pricing import Price

NOTES = Path(__file__).parents[1] / "data" / "notes"
FAST = RetryPolicy(attempts=3, base_delay_s=0.001, max_delay_s=0.01, jitter=0.0)
"""Retries that do not wait: the fake servers answer at once."""
PRICES = PriceTable({"scripted-model": Price(1.0, 2.0), "judge-model": Price(3.0, 6.0), "user-model": Price(0.5, 1.0)})


def notes_case(tmp_path: Path, **overrides: Any) -> Path:
    """A one-case suite folder on the notes test domain; ``overrides`` replace case fields."""
    data = yaml.safe_load((NOTES / "cases" / "add-note.yaml").read_text())
    data["domain"] = str(NOTES / "domain.py")
    data.update(overrides)
    folder = tmp_path / "suite"
    folder.mkdir(exist_ok=True)
    (folder / f"{data['id']}.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    return folder


def run_one(folder: Path, agent: Any, *, seed: int = 0, user: Any = None, judge: Any = None) -> Any:
    """Run trial 0 of the single case in ``folder``; returns the record (or raises infrastructure errors)."""
    from passhat.cases import load_suite
    from passhat.runner import run_trial
    from passhat.seeding import trial_seed

    suite = load_suite(str(folder))
    case = suite.cases[0]
    return asyncio.run(run_trial(case, suite.domain_of(case), agent, 0, trial_seed(seed, case.id, 0),
                                 user=user, judge=judge))
