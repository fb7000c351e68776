"""Run folders that travel: ``cases from-failure``, ``regrade`` and ``report`` from any folder, and from a
run folder copied to another place while the suite lives in a checkout at another path."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main

NOTES = Path(__file__).parents[1] / "data" / "notes"


def cli(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project (pyproject.toml at its root) with the notes suite in suites/notes and a run of a failing
    agent in runs/r, started from the project root with a relative suite path."""
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    shutil.copytree(NOTES, root / "suites" / "notes")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        result = cli("run", "suites/notes/cases", "--agent", "suites/notes/agents.py:twice", "-k", "1",
                     "--out", "runs/r", "-q", "--no-sanity")
    assert result.exit_code == 0, result.output
    return root


def suite_record(run: Path) -> dict[str, Any]:
    return json.loads((run / "manifest.json").read_text())["suite"]


def test_the_manifest_records_where_the_suite_is_three_ways(project: Path) -> None:
    record = suite_record(project / "runs" / "r")
    assert record["folder"] == str(project / "suites" / "notes" / "cases")
    assert record["folder_from_run"] == "../../suites/notes/cases"
    assert record["folder_in_project"] == "suites/notes/cases"
    assert record.get("builtin", False) is False


def test_from_another_folder(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = project / "runs" / "r"
    made = cli("cases", "from-failure", run, "add-note", 0, "--out", tmp_path / "regression.yaml")
    assert made.exit_code == 0, made.output
    regraded = cli("regrade", run, "--out", tmp_path / "regraded", "-q")
    assert regraded.exit_code == 0, regraded.output
    assert suite_record(tmp_path / "regraded")["folder"] == str(project / "suites" / "notes" / "cases")
    report = cli("report", run)
    assert report.exit_code == 0, report.output


def test_a_copied_run_folder_finds_the_suite_in_another_checkout(project: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The CI case: the run is downloaded into /tmp; the suite is in a checkout at another path; the
    recorded absolute path and the run-relative one both miss, the project-relative one finds it."""
    run = Path(shutil.copytree(project / "runs" / "r", tmp_path / "downloads" / "run"))
    checkout = tmp_path / "elsewhere" / "checkout"
    shutil.copytree(project, checkout, ignore=shutil.ignore_patterns("runs"))
    record = suite_record(run)
    record["folder"] = "/nonexistent/ci/workspace/suites/notes/cases"  # the machine that ran it
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "suite": record}))
    monkeypatch.chdir(checkout / "suites")  # anywhere inside the checkout
    made = cli("cases", "from-failure", run, "add-note", 0, "--out", tmp_path / "regression.yaml")
    assert made.exit_code == 0, made.output
    regraded = cli("regrade", run, "--out", tmp_path / "regraded", "-q")
    assert regraded.exit_code == 0, regraded.output
    assert suite_record(tmp_path / "regraded")["folder"] == str(checkout / "suites" / "notes" / "cases")

    monkeypatch.chdir(tmp_path)  # outside any checkout: nothing to find, and the error says what to pass
    lost = cli("regrade", run, "--out", tmp_path / "lost", "-q")
    assert lost.exit_code == 2 and "cannot find the suite 'notes'" in lost.output and "--suite PATH" in lost.output
    assert "/nonexistent/ci/workspace/suites/notes/cases (not there)" in lost.output
    given = cli("regrade", run, "--out", tmp_path / "given", "-q", "--suite", checkout / "suites" / "notes" / "cases")
    assert given.exit_code == 0, given.output


def test_another_suite_at_a_guessed_place_is_refused(project: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A copied run folder inside another project whose suite at the same relative path has every case
    different: some other suite, never graded against."""
    impostor = Path(shutil.copytree(project, tmp_path / "impostor"))
    case = impostor / "suites" / "notes" / "cases" / "add-note.yaml"
    case.write_text(case.read_text().replace("priority 2", "priority 3").replace("equals: 2.0", "equals: 3.0"))
    run = impostor / "runs" / "r"
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["suite"]["folder"] = "/nonexistent/where/it/ran/suites/notes/cases"
    (run / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.chdir(tmp_path)
    refused = cli("regrade", run, "--out", tmp_path / "regraded", "-q")
    assert refused.exit_code == 2, refused.output
    assert "another suite: no case of the run is unchanged there" in refused.output


def test_the_folder_the_run_read_is_used_with_every_case_edited(project: Path, tmp_path: Path) -> None:
    """Editing the suite in place and re-grading is what regrade is for."""
    checkout = Path(shutil.copytree(project, tmp_path / "checkout"))
    case = checkout / "suites" / "notes" / "cases" / "add-note.yaml"
    case.write_text(case.read_text().replace("priority 2", "priority 3").replace("equals: 2.0", "equals: 3.0"))
    run = checkout / "runs" / "r"
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["suite"]["folder"] = str(case.parent)
    (run / "manifest.json").write_text(json.dumps(manifest))
    regraded = cli("regrade", run, "--out", tmp_path / "regraded", "-q")
    assert regraded.exit_code == 0 and "changed case(s): add-note" in regraded.output, regraded.output


def test_from_failure_refuses_a_case_changed_since_the_run(project: Path, tmp_path: Path) -> None:
    checkout = Path(shutil.copytree(project, tmp_path / "checkout"))
    case = checkout / "suites" / "notes" / "cases" / "add-note.yaml"
    run = checkout / "runs" / "r"
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["suite"]["cases"]["add-note"] = "0" * 64  # as if the case had been edited after the run
    manifest["suite"]["folder"] = str(case.parent)
    (run / "manifest.json").write_text(json.dumps(manifest))
    changed = cli("cases", "from-failure", run, "add-note", 0, "--out", tmp_path / "r.yaml")
    assert changed.exit_code == 2 and "changed since run" in changed.output and "--suite" in changed.output
    forced = cli("cases", "from-failure", run, "add-note", 0, "--out", tmp_path / "r.yaml", "--suite", case.parent)
    assert forced.exit_code == 0, forced.output


def test_report_files_have_the_mode_of_the_other_run_files(project: Path) -> None:
    run = project / "runs" / "r"
    mode = stat.S_IMODE((run / "trials.jsonl").stat().st_mode)
    assert stat.S_IMODE((run / "report.html").stat().st_mode) == mode
    assert stat.S_IMODE((run / "summary.json").stat().st_mode) == mode
