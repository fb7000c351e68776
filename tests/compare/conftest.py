"""Planned suites on the notes domain and runs of them through the real CLI."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main

NOTES = Path(__file__).parents[1] / "data" / "notes"
AGENTS = NOTES / "agents_compare.py"
_spec = importlib.util.spec_from_file_location("notes_agents_compare", AGENTS)
assert _spec is not None and _spec.loader is not None
planned = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(planned)


@pytest.fixture
def cli() -> Any:
    """Invoke ``passhat`` in-process; returns the click Result."""

    def invoke(*args: Any, env: dict[str, str] | None = None) -> Any:
        return CliRunner().invoke(main, [str(a) for a in args], env=env)

    return invoke


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


@pytest.fixture
def write_suite(tmp_path: Path) -> Any:
    """Write a planned suite ({case id: "base=pp cand=pf"}) under tmp_path/NAME; returns its folder."""

    def go(plans: dict[str, str], name: str = "suite", **kw: Any) -> Path:
        return Path(planned.write_suite(tmp_path / name, plans, **kw))

    return go
