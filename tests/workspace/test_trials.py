"""Workspace trials end to end: tools, the file diff, workspace assertions, attribution, regrade, hashes.

The calc domain (tests/data/calc) is one module with a planted bug and a test for it. Every agent here
runs through ``passhat.evaluate`` like a user's would.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import passhat
import passhat.errors
from passhat.cases import load_suite
from passhat.errors import CaseError
from passhat.regrade.run import regrade_run
from passhat.workspace.sandbox import isolation

CALC = Path(__file__).parents[1] / "data" / "calc"
AGENTS = CALC / "agents.py"


def _records(run: Any) -> list[Any]:
    return list(run.records())


def _evaluate(tmp_path: Path, agent: str, *, cases: Path | None = None, trials: int = 2, **kw: Any) -> Any:
    return passhat.evaluate(str(cases or CALC / "cases"), f"{AGENTS}:{agent}", trials=trials, concurrency=2,
                            out=tmp_path / f"run-{agent}", sanity=False, **kw)


def _grade(record: Any, prefix: str) -> Any:
    return next(g for g in record.grades if g.name.startswith(prefix))


def test_a_fix_passes_and_is_recorded_as_a_file_diff(tmp_path: Path) -> None:
    run = _evaluate(tmp_path, "fixer")
    records = _records(run)
    assert [r.outcome for r in records] == ["pass", "pass"]
    files = records[0].files
    assert [(c["path"], c["kind"]) for c in files["changes"]] == [("calc.py", "modified")]
    change = files["changes"][0]
    assert "-    return sum(xs) / (len(xs) + 1)" in change["text_diff"]
    assert "+    return sum(xs) / len(xs)" in change["text_diff"]
    assert records[0].timing.commands_s > 0  # the case's pytest ran on the final tree
    assert run.summary.suite.pass_hat_k[2].estimate == 1.0


def test_editing_the_tests_fails_for_that_reason(tmp_path: Path) -> None:
    record = _records(_evaluate(tmp_path, "test_editor", trials=1))[0]
    assert record.outcome == "fail"
    protected = _grade(record, "file_unchanged")
    assert not protected.passed and "tests/test_calc.py (modified)" in protected.reason
    assert _grade(record, "command_succeeds").passed  # the gutted test passes: only the protection catches it
    assert record.failure is not None and record.failure.category == "side_effect_outside_scope"
    assert record.failure.step == 1  # the write_file call that edited the test


def test_noop_fails_the_command(tmp_path: Path) -> None:
    record = _records(_evaluate(tmp_path, "noop", trials=1))[0]
    assert record.outcome == "fail"
    assert record.files == {"changes": []}
    command = _grade(record, "command_succeeds")
    assert not command.passed and "exited 1, expected 0" in command.reason
    assert "assert 1.5 == 2.0" in command.reason  # the test's own output is the evidence


def test_a_trial_cannot_write_outside_its_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("CALC_OUTSIDE", str(outside))
    before = {p.relative_to(CALC).as_posix(): p.read_bytes() for p in CALC.rglob("*") if p.is_file()}
    record = _records(_evaluate(tmp_path, "escaper", trials=1))[0]
    refused = [c for c in record.calls if c.tool in ("write_file", "delete_file") and c.status == "tool_error"]
    assert len(refused) == 5, [(c.arguments, c.status, c.error) for c in record.calls]
    assert all("outside the workspace" in (c.error or "") or "root" in (c.error or "") for c in refused)
    assert not Path("/tmp/escaped-by-agent.txt").exists()
    assert not (tmp_path / "run-escaper" / "escaped.txt").exists()
    after = {p.relative_to(CALC).as_posix(): p.read_bytes() for p in CALC.rglob("*") if p.is_file()}
    assert after == before  # the fixture itself is untouched
    if isolation() == "none":
        pytest.skip("no user namespaces here: commands are not write-confined (documented fallback)")
    assert list(outside.iterdir()) == []
    writer = next(c for c in record.calls if c.tool == "run_command" and "by-command" in c.arguments["command"])
    # refused (the folder is hidden or read-only), not written somewhere and lost
    assert f"cannot create {outside}/by-command.txt" in writer.result["stderr"]


def test_regrade_rebuilds_the_tree_and_reruns_the_commands(tmp_path: Path) -> None:
    run = _evaluate(tmp_path, "fixer", trials=1)
    cases = tmp_path / "cases"
    shutil.copytree(CALC / "cases", cases)
    case = cases / "fix-mean.yaml"
    case.write_text(case.read_text().replace("domain: ../domain.py", f"domain: {CALC / 'domain.py'}")
                    + "  - file_matches: {path: calc.py, pattern: 'len\\(xs\\) \\+ 1'}\n")
    regrade_run(run.folder, tmp_path / "regraded", load_suite(str(cases)))
    record = _records(passhat.Run.open(tmp_path / "regraded"))[0]
    assert record.outcome == "fail"
    assert not _grade(record, "file_matches").passed  # read from the rebuilt final tree
    assert _grade(record, "command_succeeds").passed  # pytest ran again on the rebuilt tree


def test_file_assertions_need_a_workspace(tmp_path: Path) -> None:
    notes = Path(__file__).parents[1] / "data" / "notes" / "domain.py"
    (tmp_path / "c.yaml").write_text(f"id: c\ndomain: {notes}\ninstruction: x\nuser: {{identity: alice}}\n"
                                     "assertions:\n  - file_exists: {path: README.md}\n")
    with pytest.raises(CaseError) as err:
        load_suite(str(tmp_path))
    assert "assertions.0.file_exists" in str(err.value) and "workspace" in str(err.value)


@pytest.mark.parametrize("body, field", [
    ("file_unchanged: {paths: ['../etc']}", "assertions.0"),
    ("file_exists: {path: /etc/passwd}", "assertions.0.file_exists.path"),
    ("file_matches: {path: calc.py, pattern: '('}", "assertions.0"),
    ("command_succeeds: {run: ''}", "assertions.0"),
])
def test_bad_workspace_assertions_are_load_errors(tmp_path: Path, body: str, field: str) -> None:
    (tmp_path / "c.yaml").write_text(f"id: c\ndomain: {CALC / 'domain.py'}\ninstruction: x\nassertions:\n  - {body}\n")
    with pytest.raises(CaseError) as err:
        load_suite(str(tmp_path))
    assert field in str(err.value)


def test_the_suite_hash_covers_the_workspace_files(tmp_path: Path) -> None:
    copy = tmp_path / "calc"
    shutil.copytree(CALC, copy)
    first = load_suite(str(copy / "cases")).fixture_hashes()
    (copy / "repo" / "LICENSE").touch()  # mtime only
    shutil.copytree(copy, tmp_path / "moved")
    assert load_suite(str(tmp_path / "moved" / "cases")).fixture_hashes() == first
    (copy / "repo" / "LICENSE").write_text("changed\n")
    assert load_suite(str(copy / "cases")).fixture_hashes() != first


@pytest.mark.parametrize("kind", ["isolated", "command"])
def test_agents_elsewhere_use_the_same_tools(tmp_path: Path, kind: str) -> None:
    """The file tools go over the trial's HTTP tool API like any others: an isolated worker process and a
    `cmd:` program (which could be in any language) fix the bug the same way."""
    if kind == "isolated":
        run = _evaluate(tmp_path, "fixer", trials=1, isolate="process")
    else:
        run = passhat.evaluate(str(CALC / "cases"), f"cmd:{sys.executable} {CALC / 'cmd_agent.py'}", trials=1,
                               out=tmp_path / "run-cmd", sanity=False)
    records = _records(run)
    assert [r.outcome for r in records] == ["pass"], records[0].failure
    assert [c.tool for c in records[0].calls] == ["run_command", "read_file", "write_file", "run_command"]
    assert records[0].reply == "fixed"


def test_a_missing_project_dependency_stops_the_run_before_any_trial(tmp_path: Path) -> None:
    """Without the preflight every trial would fail `command_succeeds` and be counted against the agent."""
    calc = tmp_path / "calc"
    shutil.copytree(CALC, calc)
    domain = calc / "domain.py"
    domain.write_text(domain.read_text().replace(
        'command_env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})',
        'command_env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, preflight="python -c \'import not_installed_xyz\'")'))
    out = tmp_path / "run"
    with pytest.raises(passhat.errors.PasshatError) as err:
        passhat.evaluate(str(calc / "cases"), f"{calc / 'agents.py'}:fixer", trials=1, out=out)
    message = str(err.value)
    assert "domain 'calc': preflight" in message and "not_installed_xyz" in message and "whatever the agent did" in message
    assert not (out / "trials.jsonl").exists() or (out / "trials.jsonl").read_text() == ""


def test_the_bugfix_suite_says_what_to_install_when_pytest_is_missing() -> None:
    """passhat does not install pytest; the bugfix suite's preflight names the extra that does."""
    import shlex
    import subprocess
    import sys

    from passhat.domains.bugfix import domain

    argv = shlex.split(domain.preflight or "")
    assert argv[:2] == ["python", "-c"]
    without_site = subprocess.run([sys.executable, "-S", "-c", argv[2]], capture_output=True, text=True, timeout=60)
    assert without_site.returncode == 1 and "pip install passhat[pytest]" in without_site.stderr
    assert subprocess.run([sys.executable, "-c", argv[2]], timeout=60).returncode == 0  # here pytest is installed
