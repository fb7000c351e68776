"""Fixtures for the model-driven parts: a fake model server, fast retries, prices, a notes case runner."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from passhat.agents.llm import PriceTable, RetryPolicy
from passhat.agents.llm.pricing import Price
from passhat.testing.fake_models import FakeModelServer, Script

sys.path.insert(0, str(Path(__file__).parent))  # tests/llm/scripts.py

NOTES = Path(__file__).parents[1] / "data" / "notes"
FAST = RetryPolicy(attempts=3, base_delay_s=0.001, max_delay_s=0.01, jitter=0.0)
PRICES = PriceTable({"scripted-model": Price(1.0, 2.0), "judge-model": Price(3.0, 6.0), "user-model": Price(0.5, 1.0)})


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(script)`` starts a fake model server (stopped at the end of the test)."""
    servers: list[FakeModelServer] = []

    def start(script: Script) -> FakeModelServer:
        server = FakeModelServer(script).__enter__()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.__exit__(None, None, None)


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real provider: no keys, so a missing --base-url is an error, not a call."""
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PASSHAT_PRICES", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def prices_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(yaml.safe_dump({k: {"input": v.input, "output": v.output} for k, v in PRICES.prices.items()}))
    return path


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
