"""`passhat init` writes a starter suite that runs as written: its agent passes, noop fails, lint is clean."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def test_starter_suite_runs_as_written(tmp_path: Path, cli: Any) -> None:
    folder = tmp_path / "mysuite"
    r = cli("init", folder)
    assert r.exit_code == 0, r.output
    cwd = os.getcwd()
    os.chdir(folder)  # the README's commands are relative to the suite folder
    try:
        assert cli("cases", "lint", "cases").exit_code == 0
        for agent, expected in (("agent.py:agent", 1.0), ("noop", 0.0)):
            r = cli("run", "cases", "--agent", agent, "--trials", "2", "--out", f"run-{expected}", "-q", "--no-report")
            assert r.exit_code == 0, r.output
            summary = json.loads(Path(f"run-{expected}/summary.json").read_text())
            assert summary["suite"]["pass_hat_k"]["1"]["estimate"] == expected
    finally:
        os.chdir(cwd)


def test_init_refuses_to_overwrite(tmp_path: Path, cli: Any) -> None:
    assert cli("init", tmp_path / "s").exit_code == 0
    r = cli("init", tmp_path / "s")
    assert r.exit_code == 2 and "--force" in r.output
    assert cli("init", tmp_path / "s", "--force").exit_code == 0
