"""A ``.py`` domain imports its sibling modules the same way from any working directory (issue 11 item 5)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

NOTES = Path(__file__).parents[1] / "data" / "notes"
SRC = Path(__file__).parents[2] / "src"

HELPERS = (NOTES / "domain.py").read_text().split("\ndomain = Domain(")[0]
"""The notes domain's tools, as a module of their own beside the domain file."""

DOMAIN = """from pathlib import Path

from passhat.domain import Domain
{import_line}

domain = Domain(
    "siblings",
    schema=\"\"\"
    CREATE TABLE notes (id TEXT PRIMARY KEY, owner TEXT NOT NULL, title TEXT, body TEXT,
                        priority INTEGER DEFAULT 1, created_at TEXT);
    CREATE TABLE audit (seq INTEGER PRIMARY KEY, event TEXT);
    \"\"\",
    fixtures={{"default": Path(__file__).parent / "fixture.yaml"}},
    policy="Only touch the caller's notes.",
    tools=[list_notes, get_note, add_note],
)
"""


def make_suite(root: Path, import_line: str, helper_name: str) -> Path:
    """``root/domain.py`` importing its tools from ``root/<helper_name>.py``, and one case; returns ``root``."""
    (root / "cases").mkdir(parents=True)
    shutil.copy(NOTES / "fixture.yaml", root / "fixture.yaml")
    (root / f"{helper_name}.py").write_text(HELPERS)
    (root / "domain.py").write_text(DOMAIN.format(import_line=import_line))
    case = yaml.safe_load((NOTES / "cases" / "add-note.yaml").read_text())
    (root / "cases" / "add-note.yaml").write_text(yaml.safe_dump({**case, "domain": "../domain.py"}))
    return root


def passhat(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "passhat", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize(("import_line", "helper_name"), [
    ("from sibling_tools_abs import add_note, get_note, list_notes", "sibling_tools_abs"),
    ("from .sibling_tools_rel import add_note, get_note, list_notes", "sibling_tools_rel"),
])
def test_a_domain_imports_its_siblings_from_any_working_directory(tmp_path: Path, import_line: str,
                                                                  helper_name: str) -> None:
    suite = make_suite(tmp_path / "suite", import_line, helper_name)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd, cases in ((elsewhere, suite / "cases"), (suite, Path("cases")), (suite / "cases", Path("."))):
        out = tmp_path / f"run-{cwd.name}"
        r = passhat("run", cases, "--agent", f"{NOTES / 'agents.py'}:good", "-k", "1", "--out", out, "-q",
                    "--no-report", "--no-sanity", cwd=cwd)
        assert r.returncode == 0, (cwd, r.stderr)
        assert json.loads((out / "summary.json").read_text())["suite"]["pass_hat_k"]["1"]["estimate"] == 1.0


def test_two_folders_with_the_same_relative_sibling_do_not_collide(tmp_path: Path) -> None:
    from passhat.domain import load_domain

    first = make_suite(tmp_path / "first", "from .shared_name import add_note, get_note, list_notes", "shared_name")
    second = make_suite(tmp_path / "second", "from .shared_name import add_note, get_note, list_notes", "shared_name")
    (second / "shared_name.py").write_text(HELPERS.replace('"""Create a note owned by the caller.', '"""Create a note.'))
    a, b = load_domain(str(first / "domain.py")), load_domain(str(second / "domain.py"))
    assert a.tools["add_note"].description != b.tools["add_note"].description


def test_cases_import_takes_a_domain_file_relative_to_the_working_directory(tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "suite", "from sibling_tools_imp import add_note, get_note, list_notes",
                       "sibling_tools_imp")
    (suite / "requests.jsonl").write_text(json.dumps({"text": "Add a note titled 'milk'.", "identity": "alice"}) + "\n")
    r = passhat("cases", "import", "requests.jsonl", "--domain", "./domain.py", "--out", "imported", cwd=suite)
    assert r.returncode == 0, r.stderr
    [written] = (suite / "imported").glob("*.yaml")
    assert yaml.safe_load(written.read_text())["domain"] == "../domain.py"
    r = passhat("cases", "lint", suite / "imported", cwd=tmp_path)  # the reference works from the cases' folder
    assert r.returncode == 1 and "unfinished" in r.stdout + r.stderr  # loads; only its TODOs are findings
