"""Planned suites on the notes domain and runs of them through the real CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

NOTES = Path(__file__).parents[1] / "data" / "notes"
AGENTS = NOTES / "agents_compare.py"


@pytest.fixture
def plan_run(tmp_path: Path, cli: Any) -> Any:
    """Run ``agent`` (base or cand) on a suite folder with ``passhat run``; returns the run folder."""

    def go(suite: Path, agent: str, trials: int, name: str, *extra: Any, seed: int = 0) -> Path:
        out = tmp_path / name
        r = cli("run", suite, "--agent", f"{AGENTS}:{agent}", "--trials", trials, "--seed", seed, "--out", out,
                "-q", "--no-sanity", *extra)
        assert r.exit_code == 0, r.output
        return out

    return go
