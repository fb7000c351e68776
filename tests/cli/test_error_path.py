"""One error path: every user mistake is one unwrapped line naming the file, exit 2; a bug is one line, exit 70;
tracebacks only with --debug."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

NOTES = Path(__file__).parents[1] / "data" / "notes"
GOOD_AGENT = f"{NOTES / 'agents.py'}:good"


def suite_with_domain(tmp_path: Path, domain_source: str, *, helpers: str | None = None) -> Path:
    """A one-case suite whose domain is ``domain.py`` with ``domain_source``; returns the cases folder."""
    root = tmp_path / "suite"
    (root / "cases").mkdir(parents=True)
    shutil.copy(NOTES / "fixture.yaml", root / "fixture.yaml")
    (root / "domain.py").write_text(domain_source)
    if helpers is not None:
        (root / "helpers.py").write_text(helpers)
    case = yaml.safe_load((NOTES / "cases" / "add-note.yaml").read_text())
    (root / "cases" / "add-note.yaml").write_text(yaml.safe_dump({**case, "domain": "../domain.py"}))
    return root / "cases"


def run(cli: Any, cases: Path, tmp_path: Path, *extra: str) -> Any:
    return cli(*extra, "run", cases, "--agent", GOOD_AGENT, "-k", "1", "--out", tmp_path / "out", "-q", "--no-report")


def only_line(output: str) -> str:
    """The output is exactly one line (no traceback, no wrapping); returns it."""
    lines = output.splitlines()
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.parametrize(("source", "expected"), [
    ("x = 1\ndef broken(:\n    pass\n", "line 2: SyntaxError: invalid syntax"),
    ("import no_such_helper_module\n", "line 1: ModuleNotFoundError: No module named 'no_such_helper_module'"),
    ("x = 1\nraise RuntimeError('domain set-up failed')\n", "line 2: RuntimeError: domain set-up failed"),
    ("from passhat.tools import tool\n\n@tool(kind='read')\ndef peek(ctx, table):\n    '''Peek.'''\n",
     "line 3: TypeError: tool 'peek': parameter 'table' needs a type hint"),
    ("from passhat.graders import grader\n\n@grader(kind='state')\ndef tidy():\n    '''Tidy.'''\n",
     "line 3: TypeError: grader 'tidy': the first parameter must be the trial view, e.g. `def tidy(view, ...)`"),
])
def test_a_broken_domain_file_is_one_line_naming_the_file_and_line(cli: Any, tmp_path: Path, source: str,
                                                                     expected: str) -> None:
    cases = suite_with_domain(tmp_path, source)
    r = run(cli, cases, tmp_path)
    assert r.exit_code == 2
    assert only_line(r.output) == (f"error: {cases / 'add-note.yaml'}: domain: domain '../domain.py': cannot import "
                                   f"{cases / '../domain.py'}: {expected}")
    assert not (tmp_path / "out").exists()


def test_a_domain_file_without_a_domain_names_the_file(cli: Any, tmp_path: Path) -> None:
    cases = suite_with_domain(tmp_path, "x = 1\n")
    r = run(cli, cases, tmp_path)
    assert r.exit_code == 2
    file = (cases.parent / "domain.py").resolve()
    assert only_line(r.output) == (f"error: {cases / 'add-note.yaml'}: domain: domain '../domain.py': {file} defines "
                                   "no 'domain' (a passhat Domain)")


def test_an_error_in_a_sibling_module_names_that_file(cli: Any, tmp_path: Path) -> None:
    cases = suite_with_domain(tmp_path, "from .helpers import TOOLS\n", helpers="TOOLS = []\nundefined_name\n")
    r = run(cli, cases, tmp_path)
    helpers = (cases.parent / "helpers.py").resolve()
    assert r.exit_code == 2
    assert only_line(r.output).endswith(f"../domain.py: {helpers}, line 2: NameError: name 'undefined_name' is not defined")


def test_a_broken_agent_file_is_a_user_error(cli: Any, tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("async def agent(episode)\n    return 'x'\n")
    r = cli("run", NOTES / "cases", "--agent", f"{agent}:agent", "--out", tmp_path / "out")
    assert r.exit_code == 2
    assert only_line(r.output) == f"error: cannot import agent file {agent}: line 1: SyntaxError: expected ':'"


def test_debug_shows_the_traceback_of_a_user_error(cli: Any, tmp_path: Path) -> None:
    cases = suite_with_domain(tmp_path, "x = 1\nraise RuntimeError('domain set-up failed')\n")
    r = run(cli, cases, tmp_path, "--debug")
    assert r.exit_code == 2
    assert "Traceback (most recent call last)" in r.output and "RuntimeError: domain set-up failed" in r.output
    assert r.output.splitlines()[-1].startswith("error: ")
    r = cli("run", cases, "--agent", GOOD_AGENT, "--out", tmp_path / "out", env={"PASSHAT_DEBUG": "1"})
    assert r.exit_code == 2 and "Traceback (most recent call last)" in r.output


def test_user_text_is_never_read_as_markup(cli: Any) -> None:
    r = cli("cases", "lint", "x[/y]")
    assert r.exit_code == 2
    assert only_line(r.output) == "error: x[/y]: not a built-in suite (reimbursement, refunds, bugfix) nor a folder of case files"
    r = cli("suite", "hash", "[bold]x[/bold]")
    assert r.exit_code == 2 and only_line(r.output).startswith("error: [bold]x[/bold]: ")


def test_a_long_message_stays_on_one_line(cli: Any, tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 8)
    deep.mkdir(parents=True)
    r = cli("show", deep)
    assert r.exit_code == 2
    line = only_line(r.output)
    assert len(line) > 200 and str(deep) in line


def test_a_bug_is_one_line_and_exit_70(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    assert cli("run", NOTES / "cases", "--agent", GOOD_AGENT, "-k", "1", "--out", out, "-q", "--no-report").exit_code == 0

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ZeroDivisionError("division by zero")

    import passhat.report.terminal

    monkeypatch.setattr(passhat.report.terminal, "print_summary", broken)  # show imports it when it prints
    r = cli("show", out)
    assert r.exit_code == 70
    assert only_line(r.output) == ("passhat bug: ZeroDivisionError: division by zero — please report it with the traceback "
                                   "(run again with --debug, or PASSHAT_DEBUG=1, to see it)")
    r = cli("--debug", "show", out)
    assert r.exit_code == 70
    assert r.output.startswith("Traceback (most recent call last)") and "in broken" in r.output


def test_ctrl_c_exits_130(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    import passhat.report.html

    monkeypatch.setattr(passhat.report.html, "write_report", interrupted)
    r = cli("report", tmp_path)
    assert r.exit_code == 130 and only_line(r.output) == "interrupted"


def test_an_unwritable_output_is_a_user_error(cli: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = cli("init", blocker / "suite")
    assert r.exit_code == 2
    assert only_line(r.output).startswith(f"error: {blocker / 'suite'}")
