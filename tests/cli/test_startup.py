"""``passhat --help`` and ``--version`` stay light: the import graph of the CLI entry point, and the lazy
command table that lets help list every command without importing it. (Timing is bench/bench_startup.py's job.)"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from passhat import __version__
from passhat.cli import CASES_COMMANDS, COMMANDS, main

SRC = Path(__file__).parents[2] / "src"
HEAVY = ("scipy", "numpy", "pydantic", "rich.table", "rich.progress", "jinja2", "openai", "anthropic", "mcp",
         "uvicorn", "httpx2", "httpx", "opentelemetry", "sqlite3", "passhat.stats", "passhat.cases", "passhat.runner",
         "ray")
"""Modules that ``passhat --help`` / ``--version`` must not import (the first eight cost most of the old 2 s)."""


def loaded_after(code: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["cases", "--help"]])
def test_help_and_version_import_nothing_heavy(argv: list[str]) -> None:
    code = ("from passhat.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code")
    modules = loaded_after(code)
    assert "click" in modules and "passhat.cli" in modules
    assert heavy_in(modules) == []
    assert not any(m.startswith("passhat.commands.") for m in modules)


def test_a_whole_run_with_its_summary_gate_and_report_never_imports_scipy(tmp_path: Path) -> None:
    """The summary's special functions are passhat.stats._special: scipy (0.24 s of CPU) is for compare only."""
    gate = tmp_path / "gate.yaml"
    gate.write_text("name: quick\nrules:\n  - pass_hat_k: {k: 1, min: 0.5}\n")
    code = ("from passhat.cli import main\n"
            f"try:\n    main(['run', 'refunds', '--agent', 'careful', '-k', '1', '-q', '--gate', {str(gate)!r}, "
            f"'--out', {str(tmp_path / 'run')!r}])\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code")
    modules = loaded_after(code)
    assert "passhat.stats._special" in modules and (tmp_path / "run" / "summary.json").is_file()
    assert not [m for m in modules if m == "scipy" or m.startswith("scipy.")]


def test_the_guard_can_fail() -> None:
    assert heavy_in(loaded_after("import passhat.commands.gate")) != []


def test_help_lists_every_command_with_its_own_short_help() -> None:
    """The table in cli.py is what `passhat --help` shows: it must say what each command's docstring says."""
    for group, table in ((main, COMMANDS), (main.commands["cases"], CASES_COMMANDS)):
        ctx = click.Context(group)
        for name, (_, short) in table.items():
            command = group.get_command(ctx, name)
            assert command is not None and command.name == name
            for limit in (45, 74, 200):
                assert click.Command(name, help=short).get_short_help_str(limit) == command.get_short_help_str(limit), name
    listed = CliRunner().invoke(main, ["--help"]).output
    for name in [*COMMANDS, "cases", "agents"]:
        assert f"\n  {name} " in listed


def test_version_is_the_package_version(cli: object) -> None:
    r = cli("--version")  # type: ignore[operator]
    assert r.exit_code == 0 and r.output == f"passhat, version {__version__}\n"
    assert __version__ == importlib.metadata.version("passhat")


@pytest.mark.parametrize(("before", "frozen"), [("", True), ("gc.disable()", False), ("gc.freeze()", None)])
def test_a_command_s_imports_are_frozen_out_of_the_collector_unless_the_program_decided(before: str, frozen: bool | None
                                                                                        ) -> None:
    """The command's modules (passhat run's: ~45,000 objects for life) are frozen once imported; a program that
    turned the collector off or froze objects itself keeps its own setting."""
    code = (f"import gc\n{before}\nheld = gc.get_freeze_count()\nfrom passhat.cli import main\n"
            "try:\n    main(['run', '--help'])\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
            "print(__import__('json').dumps([gc.isenabled(), gc.get_freeze_count(), held]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    enabled, count, held = json.loads(r.stdout.splitlines()[-1])
    if frozen is None:  # the program's own freeze, untouched
        assert enabled and 0 < count <= held  # (frozen objects freed since leave the count)
    else:
        assert enabled is frozen and (count > 40_000) is frozen


def test_a_quiet_run_loads_what_it_prints_with_after_its_trials_and_nothing_of_a_gate_it_has_not(tmp_path: Path) -> None:
    """Before the first trial: no rich, no lint (a quiet run prints nothing until then), no summary models. After an
    ungated run: no gate evaluation, compare or numpy.ma (the report reads gate.json alone; its percentiles are
    stats')."""
    seen = tmp_path / "at_first.json"
    code = ("import passhat.runner.trial as t\nimport sys\nreal, first = t.run_trial, []\n"
            "async def run_trial(*a, **k):\n    first.append(first or set(sys.modules))\n    return await real(*a, **k)\n"
            "t.run_trial = run_trial\nfrom passhat.cli import main\n"
            f"try:\n    main(['run', 'refunds', '--agent', 'careful', '-k', '1', '-q', '--out', {str(tmp_path / 'run')!r}])\n"
            "except SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
            f"open({str(seen)!r}, 'w').write(__import__('json').dumps(sorted(first[0])))")
    after = loaded_after(code)
    at_first = set(json.loads(seen.read_text()))
    assert "passhat.runner.trial" in at_first and (tmp_path / "run" / "report.html").is_file()
    assert [m for m in at_first if m.split(".")[0] == "rich" or m.startswith(("passhat.lint", "passhat.commands.cases",
                                                                              "passhat.models.summary"))] == []
    assert "rich.console" in after
    # an in-process agent talks to no server: no HTTP client is loaded for it (a provider's capped client came in
    # through the model layer's import once, ~30 ms before the first trial)
    assert [m for m in after if m.split(".")[0] in ("httpx2", "httpx", "idna")] == []
    assert [m for m in after if m.startswith(("passhat.gate.report", "passhat.commands.gate", "passhat.compare",
                                              "passhat.report.junit")) or m == "numpy.ma"] == []
