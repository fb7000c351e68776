"""The τ²-bench importer on a small checkout of the real layout (tests/data/tau2_checkout, code of our own in τ²'s
style): import, lint, gold replay, perturbations, dual control, the sync hook, exact numbers, and bad input."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from passhat.cases.suite import Suite, load_suite
from passhat.errors import CaseError, DomainError
from passhat.runner.records import TrialRecord
from passhat.tau2_bench.checkout import read_tasks
from passhat.tau2_bench.importer import import_tau2_bench
from passhat.tau2_bench.replay import Step, gold_steps, replay

CHECKOUT = Path(__file__).resolve().parents[1] / "data" / "tau2_checkout"


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Suite]:
    out = tmp_path_factory.mktemp("tau2")
    result = import_tau2_bench(CHECKOUT, out)
    assert result.cases == {"retail": 4, "airline": 2, "telecom": 3}
    return {name: load_suite(str(folder / "cases")) for name, folder in result.suites.items()}


def _play(suite: Suite, case_id: str, steps: list[Step] | None = None, says: tuple[str, ...] = ()) -> TrialRecord:
    case = suite.case(case_id)
    return asyncio.run(replay(case, suite.domain_of(case), gold_steps(case) if steps is None else steps, says))


def _required(record: TrialRecord) -> dict[str, bool]:
    """Required grades other than the judge's (which fail closed without a judge model)."""
    return {g.name: g.passed for g in record.grades if g.required and g.grader != "judge"}


def test_cases_carry_reward_basis_fixtures_and_marked_gold_calls(suites: dict[str, Suite]) -> None:
    retail, telecom = suites["retail"], suites["telecom"]
    cancel = retail.case("retail-000")  # basis DB + NL_ASSERTION; communicate_info recorded, not required
    kinds = {a.kind: a.required for a in cancel.assertions}
    assert kinds["expect_state"] is True and kinds["reply_contains"] is False and kinds["tau2_action"] is False
    assert [(c.name, c.required) for c in cancel.judge.criteria] == [("nl_assertion_0", True)]
    assert "mia.li@example.com" in cancel.user.goal and cancel.instruction == "Hi, I need some help."
    assert [c.fails for c in retail.case("retail-001").reference] == [True, False, False]  # wrong email: User not found
    assert [a.kind for a in retail.case("retail-003").assertions] == ["unchanged_except"]  # gold actions []
    assert (cancel.split, retail.case("retail-003").split) == ("dev", "holdout")  # split_tasks.json's test split
    suspended = telecom.case("telecom-001")
    assert suspended.fixture == "task:[service_issue]line_suspended"
    assert [(c.tool, c.by) for c in telecom.case("telecom-002").reference] == [("enable_roaming", "agent"),
                                                                               ("toggle_roaming", "user")]
    assert (suspended.limits.max_steps, suspended.limits.max_tool_errors) == (200, 10)
    domain = telecom.domain_of(suspended)
    assert sorted(domain.user_tools) == ["check_status_bar", "toggle_airplane_mode", "toggle_roaming"]
    assert "toggle_airplane_mode" not in domain.tools and "<main_policy>" in domain.policy
    assert not domain.tools["transfer_to_human_agents"].ends_episode  # τ²'s transfer does not end the episode


def test_lint_is_clean(suites: dict[str, Suite], cli: Any) -> None:
    for suite in suites.values():
        result = cli("cases", "lint", str(suite.folder), "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["errors"] == 0


@pytest.mark.parametrize(("suite", "case_id", "says"), [
    ("retail", "retail-000", ()), ("retail", "retail-001", ()), ("retail", "retail-002", ()), ("retail", "retail-003", ()),
    ("airline", "airline-000", ("320",)), ("airline", "airline-001", ("150",)),
    ("telecom", "telecom-000", ()), ("telecom", "telecom-001", ()), ("telecom", "telecom-002", ()),
])
def test_gold_replay_passes_every_code_decidable_grade(suites: dict[str, Suite], suite: str, case_id: str,
                                                       says: tuple[str, ...]) -> None:
    record = _play(suites[suite], case_id, says=says)
    assert all(_required(record).values()), _required(record)
    judged = [g for g in record.grades if g.grader == "judge"]
    assert all(not g.passed and "judge" in g.reason for g in judged)  # fails closed: no judge model in this run


def test_perturbations_fail_the_component_the_basis_names(suites: dict[str, Suite]) -> None:
    retail, telecom, airline = suites["retail"], suites["telecom"], suites["airline"]
    skipped = _play(retail, "retail-000", [Step("find_user_id_by_email", {"email": "mia.li@example.com"})])
    assert _required(skipped)["expect_state(reference)"] is False
    changed = _play(retail, "retail-000", [Step("cancel_pending_order", {"order_id": "#W0001", "reason": "ordered by mistake"})])
    assert _required(changed)["expect_state(reference)"] is False
    extra = _play(retail, "retail-003", [Step("grant_store_credit", {"user_id": "mia_li_1", "amount": 5})])
    assert _required(extra)["unchanged_except: no gold actions: nothing may change"] is False
    user_skipped = _play(telecom, "telecom-000", [])  # the user never turns airplane mode off
    env = next(g for g in user_skipped.grades if g.details.get("custom_grader") == "tau2_env_assertions")
    assert not env.passed and "assert_service_status" in env.reason
    unsaid = _play(airline, "airline-000", says=())  # COMMUNICATE is in airline's basis
    assert _required(unsaid)["reply_contains(320)"] is False


def test_user_calls_are_the_users_and_only_the_user_has_them(suites: dict[str, Suite]) -> None:
    telecom = suites["telecom"]
    record = _play(telecom, "telecom-002")
    assert [(c.tool, c.by, c.status) for c in record.calls] == [("enable_roaming", "agent", "ok"),
                                                                 ("toggle_roaming", "user", "ok")]
    by_agent = _play(telecom, "telecom-002", [Step("enable_roaming", {"line_id": "L1"}), Step("toggle_roaming", {})])
    assert by_agent.calls[1].status == "unknown_tool"  # the agent has no hands on the user's phone
    action = [g for g in by_agent.grades if g.details.get("custom_grader") == "tau2_action"]
    assert [g.passed for g in action] == [True, False]  # τ²'s action check, knowing who called
    assert "by the user was never called" in action[1].reason
    assert "by" not in record.calls[0].model_dump(mode="json") and record.calls[1].model_dump(mode="json")["by"] == "user"


def test_the_sync_hook_runs_after_every_call(suites: dict[str, Suite]) -> None:
    """The agent resumes the line (resume_line writes only ``lines``); the phone learns it through τ²'s
    sync_tools after the call, and the user's service assertion holds on that."""
    record = _play(suites["telecom"], "telecom-001")
    assert [c.tool for c in record.calls] == ["get_customer_by_phone", "resume_line"]
    [change] = record.diff["user_surroundings"]
    assert (change["before"]["line_active"], change["after"]["line_active"]) == ("false", "true")
    env = next(g for g in record.grades if g.details.get("custom_grader") == "tau2_env_assertions")
    assert env.passed, env.reason


def test_numbers_keep_their_type_through_later_writes(suites: dict[str, Suite]) -> None:
    """grant_store_credit(amount=25) stores the integer 25 (τ² does not validate); cancelling then rewrites the
    same user's record (a gift card refund), and 25 must stay 25, not become 25.0."""
    retail = suites["retail"]
    case = retail.case("retail-002")
    domain = retail.domain_of(case)
    world = domain.restore("default", 0)
    try:
        from passhat.tools import ToolBoundary, ToolContext

        boundary = ToolBoundary(domain.tool_list(), ToolContext(world))
        for step in gold_steps(case):
            assert asyncio.run(boundary.call(step.tool, step.args)).ok
        credit, balance = world.db.execute(
            "SELECT store_credit, gift_card FROM users WHERE key = 'mia_li_1'").fetchone()
    finally:
        world.close()
    assert type(credit) is int and credit == 25
    assert json.loads(balance) == {"id": "gift_card_1", "balance": 64.54}
    assert all(_required(_play(retail, "retail-002")).values())


def test_error_budget_ends_the_trial(suites: dict[str, Suite]) -> None:
    retail = suites["retail"]
    steps = [Step("get_order_details", {"order_id": f"#X{i}"}) for i in range(12)]
    record = _play(retail, "retail-003", steps)
    assert record.end_reason == "error_limit" and record.outcome == "fail"
    assert len(record.calls) == 10  # the tenth failed call is answered; the eleventh is refused


def test_the_import_leaves_modules_and_environment_as_they_were(suites: dict[str, Suite]) -> None:
    assert not any(k == "tau2" or k.startswith("tau2.") for k in sys.modules)
    assert "TAU2_FIXTURE_IMPORTED" not in os.environ and "TAU2_DATA_DIR" not in os.environ


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "checkout"
    shutil.copytree(CHECKOUT, dest)
    return dest


def test_a_malformed_task_file_is_one_line_naming_the_field(tmp_path: Path) -> None:
    checkout = _copy(tmp_path)
    tasks = checkout / "data" / "tau2" / "domains" / "retail" / "tasks.json"
    data = json.loads(tasks.read_text())
    del data[1]["user_scenario"]
    tasks.write_text(json.dumps(data))
    with pytest.raises(CaseError) as exc:
        read_tasks(tasks)
    assert str(exc.value) == (f"{tasks}: tasks[1] (id '1').user_scenario: expected an object, got NoneType")
    tasks.write_text("[{\"id\": ")
    with pytest.raises(CaseError, match="not valid JSON"):
        import_tau2_bench(checkout, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written


def test_an_unknown_tool_in_a_gold_action_is_refused(tmp_path: Path) -> None:
    checkout = _copy(tmp_path)
    tasks = checkout / "data" / "tau2" / "domains" / "telecom" / "tasks.json"
    data = json.loads(tasks.read_text())
    data[2]["evaluation_criteria"]["actions"][1]["name"] = "toggle_roming"
    tasks.write_text(json.dumps(data))
    with pytest.raises(CaseError) as exc:
        import_tau2_bench(checkout, tmp_path / "out")
    assert "tasks[2] (id '[roaming]abroad_roaming_off').evaluation_criteria.actions[1].name" in str(exc.value)
    assert "unknown tool 'toggle_roming'; the user's tools are: check_status_bar" in str(exc.value)


def test_a_reference_marked_fails_that_succeeds_is_refused(suites: dict[str, Suite], tmp_path: Path) -> None:
    text = (suites["retail"].folder / "retail-001.yaml").read_text()
    case_dir = tmp_path / "cases"
    case_dir.mkdir()
    shutil.copy(suites["retail"].folder.parent / "domain.py", tmp_path / "domain.py")
    assert "email: noah@example.com" in text
    (case_dir / "c.yaml").write_text(text.replace("email: noah@example.com", "email: noah.kim@example.com"))
    with pytest.raises(CaseError, match=r"reference\.0\.fails: the reference call find_user_id_by_email is marked"):
        load_suite(str(case_dir))


def test_missing_requirements_or_checkout_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(DomainError, match="not a τ²-bench checkout"):
        import_tau2_bench(tmp_path, tmp_path / "out")
    checkout = _copy(tmp_path)
    (checkout / "src" / "tau2" / "domains" / "retail" / "tools.py").write_text("import not_installed_module\n")
    with pytest.raises(DomainError, match="imports 'not_installed_module', which is not installed here"):
        import_tau2_bench(checkout, tmp_path / "out")


def test_import_cli_and_a_split(tmp_path: Path, cli: Any) -> None:
    result = cli("cases", "import", "--format", "tau2-bench", str(CHECKOUT), "--out", str(tmp_path / "s"), "--tasks", "test")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "s" / "retail" / "cases").iterdir()) == ["retail-002.yaml", "retail-003.yaml"]
    assert sorted(p.name for p in (tmp_path / "s" / "telecom" / "cases").iterdir()) == ["telecom-002.yaml"]


def test_stored_rows_are_what_taus_hash_sees(suites: dict[str, Suite]) -> None:
    """An enum stores its value, a list field a row per position, the user's database under ``user_``, and a
    task's fixture is τ²'s set_state: its setup functions (not tools) and the sync hook have run."""
    domain = suites["telecom"].domain_of(suites["telecom"].case("telecom-001"))
    with domain.reading("task:[service_issue]line_suspended") as reader:
        assert reader.query("SELECT key, status FROM lines") == [("0", "Suspended")]
        assert reader.query("SELECT phone_number, line_active FROM user_surroundings") == [('"555-0101"', "false")]
    with domain.reading("task:[roaming]abroad_roaming_off") as reader:  # initialization_data: a float kept a float
        assert reader.query("SELECT data_used_gb, typeof(data_used_gb) FROM lines") == [(4.25, "real")]


GOLD_AGENT = '''
from pathlib import Path

import yaml

CASES = Path(CASES_FOLDER)


async def agent(episode):
    case = next(c for c in (yaml.safe_load(p.read_text()) for p in CASES.glob("*.yaml")) if c["id"] == episode.case_id)
    for call in case.get("reference", []):
        await episode.call(call["tool"], call.get("args", {}))
    return "Done."
'''


def test_a_regrade_of_an_imported_run_changes_no_verdict(suites: dict[str, Suite], tmp_path: Path, cli: Any) -> None:
    """A real `passhat run` of the imported retail suite (e-mail addresses redacted in the record), then
    `passhat regrade`: every verdict as it was; the case with an nl_assertion fails closed without a judge."""
    folder = suites["retail"].folder
    (tmp_path / "gold.py").write_text(GOLD_AGENT.replace("CASES_FOLDER", repr(str(folder))))
    run = cli("run", str(folder), "--agent", f"{tmp_path / 'gold.py'}:agent", "--trials", "1", "--out",
              str(tmp_path / "run"), "-q", "--no-sanity")
    assert run.exit_code in (0, 1), run.output
    again = cli("regrade", str(tmp_path / "run"), "--out", str(tmp_path / "re"))
    assert again.exit_code in (0, 1), again.output
    before, after = ([json.loads(line) for line in (tmp_path / name / "trials.jsonl").read_text().splitlines()]
                     for name in ("run", "re"))
    outcomes = {r["case_id"]: r["outcome"] for r in before}
    assert outcomes == {r["case_id"]: r["outcome"] for r in after}
    assert outcomes == {"retail-000": "fail", "retail-001": "pass", "retail-002": "pass", "retail-003": "pass"}
    [judged] = [g for g in before[0]["grades"] if g["grader"] == "judge"]
    assert "no judge model" in judged["reason"]
