"""Planned suites on the notes domain and the real CLI, for the CI-output tests."""

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
def write_suite(tmp_path: Path) -> Any:
    """Write a planned suite ({case id: "base=pp cand=pf"}) under tmp_path/NAME; returns its folder."""

    def go(plans: dict[str, str], name: str = "suite", **kw: Any) -> Path:
        return Path(planned.write_suite(tmp_path / name, plans, **kw))

    return go
