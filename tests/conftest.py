"""Shared fixtures: the tiny ``notes`` domain in tests/data/notes, and runs of the built-in suites made once
per session (tests/README.md says which to use when)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from math import comb
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest_plugins = ["pytester"]  # tests/pytest_plugin run inner pytest sessions
collect_ignore = ["data"]  # fixtures, not tests: the calc workspace has a test suite of its own

DATA = Path(__file__).parent / "data"
NOTES = DATA / "notes"
ROOT = Path(__file__).parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """Compile passhat's modules (and the tests' helpers) to ``__pycache__`` once, before any test.

    An editable install has no ``.pyc`` files, and where ``PYTHONDONTWRITEBYTECODE`` is set (this project's
    CI machines set it) Python never writes them: every subprocess a test starts (a CLI run, an isolated
    agent per trial, a worker) then compiled all of passhat again, about a quarter of its start-up. Python
    reads ``.pyc`` files whatever that variable says. The workspace fixtures are left alone: they are
    packaged trees, and a cache in one would be part of every trial's copy.
    """
    import compileall
    import re

    if hasattr(config, "workerinput"):  # an xdist worker: the controller compiled them
        return
    skip = re.compile(r"[/\\](workspaces|data)[/\\]")
    for folder in (ROOT / "src" / "passhat", ROOT / "tests"):
        if folder.is_dir():
            compileall.compile_dir(folder, rx=skip, quiet=2, workers=1)


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


def recompute(out: Path) -> dict[str, Any]:
    """Independent of passhat.stats: counts from the raw JSON lines, math.comb for the estimators."""
    counts: dict[str, list[int]] = {}
    for line in (out / "trials.jsonl").read_text().splitlines():
        rec = json.loads(line)
        c = counts.setdefault(rec["case_id"], [0, 0, 0])
        c[{"pass": 0, "fail": 1, "error": 2}[rec["outcome"]]] += 1
    cases = {}
    for cid, (p, f, e) in counts.items():
        n = p + f
        cases[cid] = {"n": n, "successes": p, "errors": e,
                      "hat": {k: comb(p, k) / comb(n, k) for k in range(1, n + 1)},
                      "at": {k: 1 - comb(n - p, k) / comb(n, k) for k in range(1, n + 1)}}
    return cases


def _assert_summary_matches(out: Path) -> None:
    summary = json.loads((out / "summary.json").read_text())
    mine = recompute(out)
    assert {c["id"] for c in summary["cases"]} == set(mine)
    for c in summary["cases"]:
        m = mine[c["id"]]
        assert (c["n"], c["successes"], c["errors"]) == (m["n"], m["successes"], m["errors"])
        for k, v in m["hat"].items():
            assert abs(c["pass_hat_k"][str(k)] - v) < 1e-12
        for k, v in m["at"].items():
            assert abs(c["pass_at_k"][str(k)] - v) < 1e-12
    n_max = max(m["n"] for m in mine.values())
    for k in range(1, n_max + 1):
        hats = [m["hat"][k] for m in mine.values() if m["n"] >= k]
        ats = [m["at"][k] for m in mine.values() if m["n"] >= k]
        entry = summary["suite"]["pass_hat_k"][str(k)]
        assert abs(entry["estimate"] - sum(hats) / len(hats)) < 1e-12
        assert entry["ci_low"] <= entry["estimate"] <= entry["ci_high"]
        assert abs(summary["suite"]["pass_at_k"][str(k)]["estimate"] - sum(ats) / len(ats)) < 1e-12



@pytest.fixture
def summary_matches() -> Any:
    """Checks summary.json against an independent recomputation from the raw trials.jsonl lines."""
    return _assert_summary_matches


PLANNED_AGENTS = NOTES / "agents_compare.py"


def _load_planned() -> Any:
    """tests/data/notes/agents_compare.py: agents that follow a plan written into each case."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("notes_agents_compare", PLANNED_AGENTS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def cli() -> Any:
    """Invoke ``passhat`` in-process; returns the click Result."""
    from passhat.cli import main

    def invoke(*args: Any, env: dict[str, str] | None = None) -> Any:
        return CliRunner().invoke(main, [str(a) for a in args], env=env)

    return invoke


@pytest.fixture
def write_suite(tmp_path: Path) -> Any:
    """Write a planned suite ({case id: "base=pp cand=pf"}) under tmp_path/NAME; returns its folder."""
    planned = _load_planned()

    def go(plans: dict[str, str], name: str = "suite", **kw: Any) -> Path:
        return Path(planned.write_suite(tmp_path / name, plans, **kw))

    return go


BuiltinRun = Callable[..., Path]


@pytest.fixture(scope="session")
def builtin_run(tmp_path_factory: pytest.TempPathFactory) -> BuiltinRun:
    """``builtin_run(suite, agent, trials, seed=0)``: the folder of ``passhat run SUITE --agent AGENT --trials
    N --seed S -q -j 8 --no-sanity`` through the real CLI, made once per session and shared by every test
    that asks for the same four values.

    A bugfix trial runs the project's pytest suite two or three times (about 2 s of CPU): tests that
    look at the same run must not each make their own. The folder is shared: read it, never change it
    (``shutil.copytree`` it first). Under xdist each worker has its own (its own temporary root).
    """
    from passhat.cli import main

    root = tmp_path_factory.mktemp("builtin-runs")
    made: dict[tuple[str, str, int, int], Path] = {}

    def get(suite: str, agent: str, trials: int, seed: int = 0) -> Path:
        key = (suite, agent, trials, seed)
        if key not in made:
            out = root / f"{suite}-{agent}-{trials}-{seed}"
            result = CliRunner().invoke(main, ["run", suite, "--agent", agent, "--trials", str(trials), "--seed",
                                               str(seed), "--out", str(out), "-q", "-j", "8", "--no-sanity"])
            assert result.exit_code == 0, result.output
            made[key] = out
        return made[key]

    return get
