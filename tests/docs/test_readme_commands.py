"""The README's two commands are the ones that are run: CI runs its test command as written, and its
"Try it" line names things that exist.

Last round CI called ``python3 -m pytest -rs`` while the README said ``pytest -rs``; ``python -m`` puts the
current folder on ``sys.path`` and hid a collection failure a new user hit at once. So .ci/run must contain
the README's test command, character for character, as a command line of its own, and no other pytest run.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"


def fenced_block(heading: str) -> list[str]:
    """The non-empty lines of the first fenced block under the README's ``## heading``."""
    text = README.read_text("utf-8")
    match = re.search(rf"^## {re.escape(heading)}\b.*?\n```\w*\n(.*?)^```", text, re.S | re.M)
    assert match, f"README.md has no fenced block under '## {heading}'"
    return [line for line in match.group(1).splitlines() if line.strip()]


def commands(script: str) -> list[str]:
    """The command lines of a shell script: comments and blank lines left out, indentation stripped."""
    return [line.strip() for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_the_readme_test_block_is_one_command() -> None:
    assert fenced_block("Run the tests") == ["pip install -e '.[test]' && pytest -rs"]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    (command,) = fenced_block("Run the tests")
    lines = commands(CI_RUN.read_text("utf-8"))
    assert command in lines, f".ci/run does not run the README's test command as written: {command}"
    # and it is the only test run: no `python -m pytest` (another sys.path) beside it
    pytest_runs = [line for line in lines if re.search(r"\bpytest\b", line) and "pip install" not in line.split("&&")[-1]]
    assert pytest_runs == [command], pytest_runs


def test_ci_makes_pip_and_pytest_one_interpreters() -> None:
    """On Debian ``pip`` may be the system's (which refuses to install) or a pyenv shim: .ci/run activates a
    virtual environment before the README's command, so both words name that environment's programs."""
    (command,) = fenced_block("Run the tests")
    lines = commands(CI_RUN.read_text("utf-8"))
    activate = [i for i, line in enumerate(lines) if re.match(r"(\.|source) \S*bin/activate$", line)]
    assert activate and activate[0] < lines.index(command), "no venv is activated before the README's command"
    created = [i for i, line in enumerate(lines) if " -m venv " in line]
    assert created and created[0] < activate[0]


def test_the_try_it_line_is_one_command_that_names_what_exists() -> None:
    """``pip install . && passhat run SUITE --agent AGENT --trials N``: one line a user can paste, whose
    program is the project's script and whose suite, agent and options the CLI accepts."""
    from passhat.agents import REFERENCE_AGENTS
    from passhat.cli import main
    from passhat.domain import BUILTIN_DOMAINS

    lines = fenced_block("Try it")
    assert len(lines) == 1, lines
    install, _, run = lines[0].partition(" && ")
    assert install == "pip install ."
    argv = shlex.split(run)
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert argv[0] in scripts and scripts[argv[0]] == "passhat.cli:main"
    assert argv[1] == "run"
    suite, agent = argv[2], argv[argv.index("--agent") + 1]
    assert suite in BUILTIN_DOMAINS and agent in REFERENCE_AGENTS
    run_command = main.get_command(None, "run")  # type: ignore[arg-type]
    assert run_command is not None
    ctx = run_command.make_context("run", argv[2:])  # parses like the real call: unknown options raise
    assert ctx.params["trials"] == int(argv[argv.index("--trials") + 1])


@pytest.mark.parametrize("block", ["Try it", "Run the tests"])
def test_the_readme_blocks_are_bash(block: str) -> None:
    text = README.read_text("utf-8")
    assert re.search(rf"^## {re.escape(block)}\b.*?\n```bash\n", text, re.S | re.M)


def test_ci_holds_mypy_at_zero() -> None:
    """.ci/run runs mypy on src/ (pyproject's [tool.mypy]) before the tests: a type error fails CI."""
    ci = (Path(__file__).parents[2] / ".ci" / "run").read_text("utf-8")
    assert "\nmypy\n" in ci and ci.index("\nmypy\n") < ci.index("pytest -rs")


def test_the_headline_the_readme_quotes_is_the_one_its_command_prints(tmp_path: Path) -> None:
    """The README quotes the sentence its "Try it" command prints: a figure typed in once goes stale when the
    statistics change (it said 0.82 after the interval became Gaffke's, whose bound rounded down is 0.81)."""
    import passhat
    from passhat.report.headline import headline

    text = " ".join(README.read_text("utf-8").split())
    quoted = re.search(r'The output starts with the run in one sentence — "(.*?)" —', text)
    assert quoted, "README.md no longer quotes the headline"
    run = passhat.evaluate("reimbursement", "careful", trials=4, out=tmp_path / "run", on_warning=lambda _m: None)
    assert quoted.group(1) == headline(run.summary).text
