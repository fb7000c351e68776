"""Fixtures for the model-driven parts: a fake model server, fast retries, prices, a notes case runner."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from passhat.testing.fake_models import FakeModelServer, Script
from tests.llm.helpers import PRICES

sys.path.insert(0, str(Path(__file__).parent))  # tests/llm/scripts.py



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
