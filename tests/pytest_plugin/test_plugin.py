"""The pytest plugin, through inner pytest sessions (pytester): fixture, marker, case files, rules, xdist."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Inner sessions run in this process (pytester.runpytest) and drop the modules they imported when they end;
# numpy cannot be imported twice in one process, so what evaluate() imports is imported here first.
import passhat.api  # noqa: F401
import passhat.compare  # noqa: F401
import passhat.gate  # noqa: F401
import passhat.results  # noqa: F401
import passhat.runner.sanity  # noqa: F401

REFUNDS = Path(__file__).parents[2] / "src" / "passhat" / "domains" / "refunds" / "cases"
EXAMPLE = Path(__file__).parents[2] / "examples" / "pytest"
PLUGIN = ("-p", "passhat.pytest_plugin", "-p", "no:cacheprovider", "-p", "no:benchmark")
XDIST = importlib.util.find_spec("xdist") is not None

FIXTURE_TESTS = '''
import pytest

def test_refunds_are_reliable(passhat_eval):
    run = passhat_eval("refunds", cases=["refund-4812", "refund-4812-drop-response"], trials=2)
    assert run.pass_hat_k(2).low >= 0.15  # 2 of 2 cases: Clopper–Pearson's 0.025^(1/2) = 0.158

@pytest.mark.passhat("refunds", cases=["refund-4812"], trials=2)
def test_marker(passhat_run):
    assert passhat_run.summary.cases[0].n == 2
    assert passhat_run.pass_hat_k(2).estimate == 1.0
'''


def _cases(pytester: pytest.Pytester, *names: str) -> Path:
    folder = pytester.path / "cases"
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(REFUNDS / f"{name}.yaml", folder / f"{name}.yaml")
    return folder


def test_fixture_and_marker_pass_with_a_careful_agent(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FIXTURE_TESTS)
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", "careful")
    result.assert_outcomes(passed=2)


def test_a_failing_test_lists_failing_cases_and_their_first_failing_check(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FIXTURE_TESTS)
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", "hasty")
    result.assert_outcomes(passed=1, failed=1)  # hasty passes refund-4812 alone (the marker's test)
    result.stdout.fnmatch_lines([
        "*assert * >= 0.15",
        "*- passhat -*",
        "refunds · hasty: 1 of 2 case(s) did not pass every trial (*)",
        "  refund-4812-drop-response: 0/2 passed — trial 0: row_count: one refund, not two: count of refunds "
        "where order_id=4812: expected 1, actual 2 [[]duplicate_write[]]",
        "  pass^1 0.500 *, pass^2 0.500 *",
    ])


def test_an_agent_given_in_the_test_wins_and_none_at_all_is_a_clear_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
async def my_agent(episode):
    return "I did nothing."

def test_own_agent(passhat_eval):
    run = passhat_eval("refunds", my_agent, cases=["refund-4812"], trials=1, sanity=False)
    assert run.manifest.agent.endswith("my_agent") and run.pass_hat_k(1).estimate == 0.0

def test_no_agent(passhat_eval):
    passhat_eval("refunds", cases=["refund-4812"])

def test_marker_missing(passhat_run):
    pass
''')
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=1, failed=1, errors=1)  # a fixture that cannot be set up is an error
    result.stdout.fnmatch_lines(["*passhat_run needs @pytest.mark.passhat(SUITE*",
                                 "*passhat: no agent — pass one*--passhat-agent SPEC*"])


def test_case_files_are_collected_only_when_an_agent_is_configured(pytester: pytest.Pytester) -> None:
    cases = _cases(pytester, "refund-4812", "refund-4812-drop-response")
    (cases / "ci.yaml").write_text("name: ci\non: [push]\n")  # ordinary YAML is never collected
    pytester.makefile(".yaml", gate="name: release\nrules: []\n")
    off = pytester.runpytest(*PLUGIN, "--collect-only", "-q")
    assert off.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    on = pytester.runpytest(*PLUGIN, "--passhat-agent", "careful", "--collect-only", "-q")
    on.stdout.fnmatch_lines(["cases/refund-4812-drop-response.yaml::refund-4812-drop-response",
                             "cases/refund-4812.yaml::refund-4812", "2 tests collected*"])
    pytester.makeini("[pytest]\npasshat_agent = careful\npasshat_trials = 2\n")
    by_ini = pytester.runpytest(*PLUGIN, str(cases))
    by_ini.assert_outcomes(passed=2)


def test_case_items_fail_with_the_rule_the_counts_and_the_first_failing_check(pytester: pytest.Pytester) -> None:
    cases = _cases(pytester, "refund-4812", "refund-4812-drop-response")
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", "hasty", "--passhat-trials", "3", str(cases))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*_ passhat case refund-4812-drop-response _*",
        "refund-4812-drop-response: 0/3 trials passed with hasty; rule: every trial passes",
        "  first failure, trial 0: row_count: one refund, not two: * expected 1, actual 2 [[]duplicate_write[]]",
        "  run folder: *",
    ])


def test_a_case_file_that_does_not_load_is_a_collection_error_naming_the_field(pytester: pytest.Pytester) -> None:
    cases = _cases(pytester, "refund-4812")
    text = (REFUNDS / "refund-4812.yaml").read_text().replace("id: refund-4812", "id: broken")
    (cases / "broken.yaml").write_text(text.replace("limits: {max_steps: 15}", "limits: {max_steps: many}"))
    (cases / "no-domain.yaml").write_text(text.replace("id: broken", "id: no-domain").replace("domain: refunds\n", ""))
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", "careful", "--passhat-trials", "1", str(cases))
    assert result.ret == pytest.ExitCode.INTERRUPTED  # pytest stops at collection errors: nothing half-run
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*broken.yaml: limits.max_steps: Input should be a valid integer*",
                                 "*no-domain.yaml: domain: Field required*"])


def test_a_case_whose_domain_does_not_load_fails_its_item_naming_the_field(pytester: pytest.Pytester) -> None:
    cases = _cases(pytester, "refund-4812")
    text = (REFUNDS / "refund-4812.yaml").read_text().replace("id: refund-4812", "id: elsewhere")
    (cases / "elsewhere.yaml").write_text(text.replace("domain: refunds", "domain: no_such_module:domain"))
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", "careful", "--passhat-trials", "1", str(cases))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*elsewhere.yaml: domain: *no_such_module*"])


def test_hidden_goal_case_files_are_collected_and_run(pytester: pytest.Pytester) -> None:
    """A case without `instruction` (the user opens with "Hi, I need some help." and holds a private goal) is a
    valid case file; the plugin used to drop it without a word."""
    notes = Path(__file__).parents[1] / "data" / "notes"
    cases = pytester.mkdir("goal")
    shutil.copy(notes / "domain.py", pytester.path / "domain.py")
    shutil.copy(notes / "fixture.yaml", pytester.path / "fixture.yaml")
    text = (notes / "cases" / "add-note.yaml").read_text()
    text = text.replace('instruction: "Add a note titled \'call mom\' with priority 2."\n', "")
    assert "instruction" not in text
    (cases / "goal.yaml").write_text(text.replace("user: {identity: alice,", 'user: {identity: alice, goal: "a note: call mom",'))
    agent = f"{notes / 'agents.py'}:good"
    collected = pytester.runpytest(*PLUGIN, "--passhat-agent", agent, "--collect-only", "-q", str(cases))
    collected.stdout.fnmatch_lines(["goal/goal.yaml::add-note", "1 test collected*"])
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", agent, "--passhat-trials", "1", str(cases))
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(("rule", "passes"), [
    ("pass_rate>=0.5", True),   # 4/4: Wilson lower bound 0.510
    ("pass^2>=0.25", True),     # 0.510² = 0.260
    ("pass_rate>=0.3", False),  # hasty passes none of its 4 trials: lower bound 0
])
def test_verdict_rules_decide_on_the_lower_bound(pytester: pytest.Pytester, rule: str, passes: bool) -> None:
    cases = _cases(pytester, "refund-4812-drop-response")
    agent = "careful" if passes else "hasty"
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", agent, "--passhat-rule", rule, str(cases))
    result.assert_outcomes(passed=int(passes), failed=int(not passes))
    if not passes:
        result.stdout.fnmatch_lines(["refund-4812-drop-response: 0/4 trials passed, * with hasty; rule: *lower bound*"])


def test_a_malformed_rule_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", "careful", "--passhat-rule", "most")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--passhat-rule / passhat_rule 'most': expected all, pass_rate>=X or pass^K>=X*"])


@pytest.mark.parametrize(("options", "words"), [
    (("--passhat-trials", "8", "--passhat-rule", "pass^4>=0.5"),
     "*'pass^4>=0.5' can never pass with 8 trial(s) per case: even 8/8 gives a lower bound of 0.208 < 0.5*"
     "at least 21 trials (--passhat-trials 21), or a bar of at most 0.208 at 8 trials"),
    (("--passhat-rule", "pass_rate>=0.6"), "*'pass_rate>=0.6' can never pass with 4 trial(s)*at least 6 trials*"),
    (("--passhat-rule", "pass_rate>=1"), "*a lower bound never reaches 1: use `all`*"),
])
def test_a_rule_no_agent_could_meet_is_a_usage_error(pytester: pytest.Pytester, options: tuple[str, ...],
                                                     words: str) -> None:
    """Issue 24: `--passhat-trials 8 --passhat-rule 'pass^4>=0.5'` (the documented example) failed every case of
    every agent, 8/8 included; now it stops before anything runs and says what would be possible."""
    _cases(pytester, "refund-4812")
    result = pytester.runpytest(*PLUGIN, "--passhat-agent", "careful", *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([words])


@pytest.mark.skipif(not XDIST, reason="pytest-xdist is not installed")
def test_xdist_workers_run_their_own_items_in_folders_of_their_own(pytester: pytest.Pytester) -> None:
    names = ["refund-4812", "refund-4812-drop-response", "over-amount-4830", "store-credit-4820"]
    cases = _cases(pytester, *names)
    tests = pytester.makepyfile(FIXTURE_TESTS)
    out = pytester.path / "runs"
    result = pytester.runpytest_subprocess(*PLUGIN, "-n", "2", "--passhat-agent", "careful", "--passhat-trials", "2",
                                           "--passhat-out", str(out), str(cases), str(tests))
    result.assert_outcomes(passed=len(names) + 2)
    folders = sorted(p for p in out.iterdir() if (p / "summary.json").is_file())
    assert len(folders) == len(names) + 2  # one complete run per item, none shared


def _example(agent: str) -> subprocess.CompletedProcess[str]:
    """``pytest`` in examples/pytest as a user runs it (its pytest.ini), importing this passhat."""
    source = str(Path(passhat.api.__file__).parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--passhat-agent", agent],
                          cwd=EXAMPLE, capture_output=True, text=True, timeout=300, env=env)


def test_the_example_passes_with_careful_and_fails_with_hasty() -> None:
    careful = _example("careful")
    assert careful.returncode == 0, careful.stdout + careful.stderr
    assert "2 passed" in careful.stdout
    hasty = _example("hasty")
    assert hasty.returncode == 1, hasty.stdout + hasty.stderr
    assert "2 failed" in hasty.stdout
    assert "refund-4812-drop-response: 0/4 passed — trial 0: row_count: one refund, not two" in hasty.stdout
    assert "email-drop-4870: 0/4 passed" in hasty.stdout
