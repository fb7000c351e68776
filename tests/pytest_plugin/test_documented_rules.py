"""Every pytest rule the docs and examples show can pass: each is run against a perfect agent (issue 24).

The documented ``--passhat-trials 8 --passhat-rule 'pass^4>=0.5'`` failed every case even at 8/8 (a lower
bound of 0.208). ``careful`` passes every built-in case, so a documented rule it fails is a rule no agent
can meet.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

import passhat.api  # noqa: F401 - numpy is imported once, before the inner sessions (see test_plugin.py)
import passhat.results  # noqa: F401

ROOT = Path(__file__).parents[2]
CASE = ROOT / "src" / "passhat" / "domains" / "refunds" / "cases" / "refund-4812.yaml"
PLUGIN = ("-p", "passhat.pytest_plugin", "-p", "no:cacheprovider", "-p", "no:benchmark")
TEXT_SUFFIXES = {".md", ".ini", ".cfg", ".toml", ".yml", ".yaml", ".py", ".txt", ".sh"}
INI_SETTING = re.compile(r"^\s*(passhat_rule|passhat_trials)\s*=\s*(.+?)\s*$", re.MULTILINE)


def documented_rules() -> list[tuple[str, int, str]]:
    """(where, trials, rule) for every rule in README.md, docs/*.md and examples/: a command line's
    ``--passhat-rule`` with its ``--passhat-trials`` (default 4), and an ini file's ``passhat_rule`` with its
    ``passhat_trials``."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted(p for p in (ROOT / "examples").rglob("*") if p.suffix in TEXT_SUFFIXES and p.is_file())]
    found = []
    for path in files:
        text = path.read_text("utf-8")
        where = str(path.relative_to(ROOT))
        for line in text.splitlines():
            if "--passhat-rule" not in line:
                continue
            try:
                words = shlex.split(line.strip().strip("`"))
            except ValueError:
                continue
            options = dict(zip(words, words[1:], strict=False))
            rule = options.get("--passhat-rule")
            if rule is not None and rule != "RULE":  # RULE: the option table's placeholder
                found.append((where, int(options.get("--passhat-trials", 4)), rule))
        settings = dict(INI_SETTING.findall(text))
        if "passhat_rule" in settings:
            found.append((where, int(settings.get("passhat_trials", 4)), settings["passhat_rule"]))
    return found


RULES = documented_rules()


def test_the_docs_show_rules() -> None:
    assert any(where == "docs/python-api.md" for where, *_ in RULES), RULES


@pytest.mark.parametrize(("where", "trials", "rule"), RULES, ids=[f"{w}:{r}@{t}" for w, t, r in RULES])
def test_a_documented_rule_passes_a_perfect_agent(pytester: pytest.Pytester, where: str, trials: int,
                                                  rule: str) -> None:
    folder = pytester.mkdir("cases")
    shutil.copy(CASE, folder / CASE.name)
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", "careful", "--passhat-trials", str(trials),
                                "--passhat-rule", rule, str(folder))
    assert result.ret == pytest.ExitCode.OK, f"{where}: {rule} at {trials} trials\n" + "\n".join(
        result.outlines + result.errlines)
    result.assert_outcomes(passed=1)
