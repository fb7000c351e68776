"""A broken ``--agent module:function`` is one line and exit 2 before any trial, within a bounded time.

A fuzz run found seven specs that made ``passhat run`` hang: a module that raises on import, exits, hangs
on import, is not callable, or names a class that cannot be built. Each is tried here as a file spec and
as a module spec; none may start a trial (the run folder stays without records).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main

NOTES = Path(__file__).parents[1] / "data" / "notes"
_names = itertools.count()

BROKEN = {
    "raises": ("raise RuntimeError('no key configured')\n", "RuntimeError: no key configured"),
    "exits": ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    "not-callable": ("agent = 42\n", "is not callable (it is int)"),
    "class-needs-arguments": ("class agent:\n    def __init__(self, model):\n        self.model = model\n"
                              "    async def __call__(self, episode):\n        return None\n",
                              "cannot be built with no arguments"),
    "class-raises": ("class agent:\n    def __init__(self):\n        raise ValueError('no model')\n",
                     "ValueError: no model"),
    "no-attribute": ("def other(episode):\n    return None\n", "has no attribute 'agent'"),
}


def run(tmp_path: Path, spec: str, **env: str) -> Any:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", spec, "-k", "1", "--out", str(out),
                                       "-q", "--no-report", "--no-sanity"], env=env)
    assert not (out / "trials.jsonl").exists() or (out / "trials.jsonl").read_text() == "", "a trial ran"
    return result


@pytest.mark.parametrize("form", ["file", "module"])
@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_broken_agent_is_bad_input_before_any_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      kind: str, form: str) -> None:
    source, expected = BROKEN[kind]
    name = f"broken_agent_{next(_names)}"  # a fresh module name: nothing cached from another test
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{tmp_path / name}.py:agent" if form == "file" else f"{name}:agent"
    result = run(tmp_path, spec)
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert line.startswith("error: ") and len(line.splitlines()) == 1 and expected in line, result.output


def test_an_import_that_never_finishes_is_bad_input_after_the_limit(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    release = tmp_path / "release"
    name = f"hangs_on_import_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(
        f"import os, time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.02)\n"
        "async def agent(episode):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        result = run(tmp_path, f"{name}:agent", PASSHAT_AGENT_IMPORT_TIMEOUT="0.3")
    finally:
        release.write_text("")  # the abandoned import thread ends, so it does not outlive the test
    assert result.exit_code == 2, result.output
    assert f"importing {name} did not finish within 0.3 s" in result.output
    assert "PASSHAT_AGENT_IMPORT_TIMEOUT" in result.output


@pytest.mark.parametrize("value", ["soon", "0", "-1", "inf"])
def test_a_bad_import_limit_names_the_variable(tmp_path: Path, value: str) -> None:
    result = run(tmp_path, f"{NOTES / 'agents.py'}:good", PASSHAT_AGENT_IMPORT_TIMEOUT=value)
    assert result.exit_code == 2 and "PASSHAT_AGENT_IMPORT_TIMEOUT" in result.output, result.output


def test_a_good_agent_still_runs(tmp_path: Path) -> None:
    result = run_ok = CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", f"{NOTES / 'agents.py'}:good",
                                                "-k", "1", "--out", str(tmp_path / "out"), "-q", "--no-report"])
    assert run_ok.exit_code == 0, result.output
    assert len((tmp_path / "out" / "trials.jsonl").read_text().splitlines()) == 1
