"""Custom graders: registered once on the domain, named from case files, validated at load, failing closed.

The test domain (tests/data/refund_approvals) needs checks the built-in assertions do not have: a
refund must equal the approved amount (state), the approval must be read first (trajectory), the reply
must quote the refund id (reply), and a judge model scores the apology (judge).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from passhat.calibrate.inputs import judgments_from_grades
from passhat.cases import Case, load_suite
from passhat.cases.assertions import ASSERTION_KINDS
from passhat.cli import main
from passhat.domain import Domain, load_domain
from passhat.episode import Episode, Message, Usage
from passhat.errors import CaseError, DomainError, InfrastructureError
from passhat.graders import Grade, TrialView, Verdict, grader
from passhat.graders.judge import Judge, judge_trial
from passhat.imports import import_file
from passhat.lint import lint_suite
from passhat.llm import PriceTable, RetryPolicy, chat_model
from passhat.llm.pricing import Price
from passhat.regrade import regrade_run
from passhat.runner import RunConfig, execute
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore
from passhat.runner.trial import run_trial
from passhat.testing.fake_models import FakeModelServer, Turn, scripted
from passhat.world import Diff

DATA = Path(__file__).parents[1] / "data" / "refund_approvals"
agents = import_file(DATA / "agents.py", "agent")  # not `import agents`: that is the OpenAI Agents SDK's name
BASE = load_domain(str(DATA / "domain.py"))
FAST = RetryPolicy(attempts=2, base_delay_s=0.001, max_delay_s=0.01, jitter=0.0)
PRICES = PriceTable({"judge-model": Price(3.0, 6.0)})


def case_data(*assertions: Any, case_id: str = "refund", domain: str = "../domain.py") -> dict[str, Any]:
    return {"id": case_id, "domain": domain, "instruction": "Please refund order O-1.", "user": {"identity": "C-1"},
            "assertions": list(assertions)}


@pytest.fixture
def suite(tmp_path: Path) -> Iterator[Any]:
    """``suite(*cases)`` writes a suite folder next to a copy of the test domain and returns the cases folder."""
    shutil.copy(DATA / "domain.py", tmp_path / "domain.py")
    shutil.copy(DATA / "fixture.yaml", tmp_path / "fixture.yaml")
    folder = tmp_path / "cases"

    def write(*cases: dict[str, Any]) -> Path:
        folder.mkdir(exist_ok=True)
        for old in folder.glob("*.yaml"):
            old.unlink()
        for c in cases:
            (folder / f"{c['id']}.yaml").write_text(yaml.safe_dump(c, sort_keys=False))
        return folder

    yield write


def run(folder: Path, agent: Any, trials: int, out: Path, judge: Judge | None = None) -> list[TrialRecord]:
    cfg = RunConfig(suite=load_suite(str(folder)), agent=agent, agent_spec="test", trials=trials, out=out, judge=judge)
    asyncio.run(execute(cfg))
    records = [TrialRecord.model_validate_json(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    return sorted(records, key=lambda r: (r.case_id, r.trial))


def one_trial(case: dict[str, Any], domain: Domain, agent: Any = agents.careful, judge: Judge | None = None) -> TrialRecord:
    loaded = Case.model_validate({**case, "domain": "test"})
    return asyncio.run(run_trial(loaded, domain, agent, 0, 7, judge=judge))


def with_graders(*graders: Any) -> Domain:
    return Domain("refund_approvals", schema=BASE.schema_sql, fixtures=BASE.fixtures, policy=BASE.policy,
                  tools=BASE.tool_list(), graders=[*BASE.graders.values(), *graders])


def grade(record: TrialRecord, prefix: str) -> Any:
    [g] = [g for g in record.grades if g.name.startswith(prefix)]
    return g


# --- graded in a run ----------------------------------------------------------------------------------


def test_custom_graders_pass_and_fail_the_right_trials(tmp_path: Path) -> None:
    records = run(DATA / "cases", agents.alternating, 4, tmp_path / "run")
    assert [r.outcome for r in records] == ["pass", "fail", "pass", "fail"]
    for r in records:
        state, order, reply = (grade(r, n) for n in ("refund_matches_approval", "approval_read_first", "reply_quotes_refund"))
        assert (state.grader, order.grader, reply.grader) == ("state", "trajectory", "reply")
        assert state.details["custom_grader"] == "refund_matches_approval" and state.details["params"] == {"order_id": "O-1"}
        assert reply.passed  # every agent quotes its refund id
        if r.trial % 2 == 0:
            assert state.passed and order.passed and state.reason == "refunded 60 on O-1, approved 60"
        else:
            assert not state.passed and state.reason == "refunded 100 on O-1, approved 60"
            assert not order.passed and order.details["step"] == 2
            # the earliest failing step wins: the refund issued without reading the approval
            assert r.failure is not None and (r.failure.category, r.failure.step) == ("skipped_verification", 2)


@pytest.mark.parametrize(("name", "category"), [("refund_matches_approval", "wrong_final_state"),
                                                 ("approval_read_first", "skipped_verification"),
                                                 ("reply_quotes_refund", "missing_information_in_reply")])
def test_a_failed_custom_grade_is_attributed_by_the_graders_kind(name: str, category: str) -> None:
    async def quiet(ep: Episode) -> str:  # refunds the order amount without reading the approval, quotes nothing
        await ep.call("issue_refund", {"order_id": "O-1", "amount": 100.0})
        return "Done."

    params = {} if name == "reply_quotes_refund" else {"order_id": "O-1"}
    record = one_trial(case_data({name: params}), BASE, quiet)
    assert record.outcome == "fail" and record.failure is not None
    assert record.failure.category == category


def test_grader_named_like_a_builtin_prefix_is_not_read_as_one() -> None:
    @grader(kind="state")
    def unchanged_except_audit(view: TrialView) -> bool:
        """Always fails (its name starts like the built-in side-effect check)."""
        return False

    record = one_trial(case_data({"unchanged_except_audit": {}}), with_graders(unchanged_except_audit))
    assert record.failure is not None and record.failure.category == "wrong_final_state"


# --- validated at load ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("assertion", "field", "words"), [
    ({"refund_matches_approval": {"order_id": 1}}, "assertions.0.refund_matches_approval.order_id",
     "Input should be a valid string"),
    ({"refund_matches_approval": {"order_id": "O-1", "tolerence": 1}}, "assertions.0.refund_matches_approval.tolerence",
     "unknown parameter; grader refund_matches_approval(order_id: str, tolerance: float = 0.0)"),
    ({"refund_matches_approval": {}}, "assertions.0.refund_matches_approval.order_id", "Field required"),
    ({"refund_matches_approval": {"order_id": "O-1", "tolerance": "a little"}},
     "assertions.0.refund_matches_approval.tolerance", "valid number"),
    ("apologises_warmly", "assertions.0.apologises_warmly",
     "unknown assertion 'apologises_warmly' (did you mean 'apologises'?): not a built-in assertion (row_count, "),
    ({"refund_matches": {"order_id": "O-1"}}, "assertions.0.refund_matches",
     "nor a grader of domain 'refund_approvals' (its graders: apologises, approval_read_first, "
     "refund_matches_approval, reply_quotes_refund)"),
])
def test_bad_custom_assertions_are_load_errors_naming_file_and_field(suite: Any, assertion: Any, field: str,
                                                                     words: str) -> None:
    folder = suite(case_data(assertion))
    with pytest.raises(CaseError) as info:
        load_suite(str(folder))
    assert info.value.file.endswith("refund.yaml")
    assert info.value.field == field
    assert words in info.value.message


def test_unknown_grader_refuses_the_run_before_any_trial(suite: Any, tmp_path: Path) -> None:
    folder = suite(case_data({"refund_matches_approvall": {"order_id": "O-1"}}))
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(folder), "--agent", f"{DATA / 'agents.py'}:careful", "--out", str(out)])
    assert r.exit_code == 2, r.output
    [line] = r.output.splitlines()
    assert line.startswith(f"error: {folder / 'refund.yaml'}: assertions.0.refund_matches_approvall: ")
    assert "did you mean 'refund_matches_approval'?" in line
    assert not (out / "trials.jsonl").exists()


def test_a_case_file_can_use_every_form(suite: Any) -> None:
    folder = suite(case_data("reply_quotes_refund", {"reply_quotes_refund": None},
                             {"refund_matches_approval": {"order_id": "O-1", "tolerance": 1, "description": "the approved 60"}},
                             {"kind": "approval_read_first", "order_id": "O-1"}))
    [case] = load_suite(str(folder)).cases
    assert [a.kind for a in case.assertions] == ["reply_quotes_refund", "reply_quotes_refund", "refund_matches_approval",
                                                 "approval_read_first"]
    assert case.assertions[2].params == {"order_id": "O-1", "tolerance": 1}
    assert case.assertions[2].description == "the approved 60"


# --- failing closed ---------------------------------------------------------------------------------------


@grader(kind="state")
def raises(view: TrialView) -> bool:
    """A grader with a bug."""
    return {}["missing"]  # type: ignore[no-any-return]


@grader(kind="state")
def forgets_to_return(view: TrialView) -> bool:
    """Returns None."""
    view.query("SELECT 1")
    return None  # type: ignore[return-value]


@grader(kind="reply")
def truthy_string(view: TrialView) -> bool:
    """Returns a non-empty string, which is truthy but not a verdict."""
    return "False"  # type: ignore[return-value]


@grader(kind="state")
def exits(view: TrialView) -> bool:
    """Calls sys.exit."""
    sys.exit(3)


@grader(kind="trajectory")
def writes(view: TrialView) -> bool:
    """Tries to change the final state it is grading."""
    view.query("DELETE FROM refunds")
    return True


@grader(kind="reply")
def nan_score(view: TrialView) -> Verdict:
    """Scores with a division by zero it did not guard (a NaN; the record is JSON, which has none)."""
    return Verdict(True, "scored", score=float("nan"))


@grader(kind="state")
def infinite_detail(view: TrialView) -> Verdict:
    """Keeps a ratio whose denominator was 0."""
    return Verdict(True, "kept a ratio", details={"ratios": [0.5, float("inf")]})


@grader(kind="trajectory")
def infinite_grade(view: TrialView) -> Grade:
    """Returns a Grade with an infinite score."""
    return Grade(grader="trajectory", name="infinite_grade", passed=True, reason="ok", score=float("-inf"))


@pytest.mark.parametrize(("bad", "words"), [
    (raises, "the grader raised KeyError: 'missing'"),
    (nan_score, "the grader returned score nan; a score is a finite number (or None for no score)"),
    (infinite_detail, "the grader returned details.ratios[1] as NaN or infinity; NaN and infinity are not JSON numbers"),
    (infinite_grade, "the grader returned score -inf"),
    (forgets_to_return, "the grader returned NoneType None; expected True/False, (passed, reason), a Verdict or a Grade"),
    (truthy_string, "the grader returned str 'False'"),
    (exits, "the grader raised SystemExit: 3"),
    (writes, "the grader raised OperationalError: attempt to write a readonly database"),
])
def test_a_grader_that_raises_or_returns_no_verdict_fails_closed(bad: Any, words: str) -> None:
    record = one_trial(case_data({bad.name: {}}, {"refund_matches_approval": {"order_id": "O-1"}}), with_graders(bad))
    assert record.outcome == "fail"
    g = grade(record, bad.name)
    assert not g.passed and g.required and words in g.reason
    assert grade(record, "refund_matches_approval").passed  # the other grades are unaffected
    assert record.diff  # the refund the agent made is still there
    json.loads(RunStore(Path("unused")).encode(record), parse_constant=float_refused)  # and the record is JSON


def float_refused(word: str) -> Any:
    raise AssertionError(f"{word} is not JSON")


def test_params_that_no_longer_fit_fail_closed_at_grading() -> None:
    """A case built in code skips the loader's check; grading validates again instead of passing."""
    record = one_trial(case_data({"refund_matches_approval": {"order_id": 5}}), BASE)
    g = grade(record, "refund_matches_approval")
    assert not g.passed and "parameters do not fit refund_matches_approval(order_id: str" in g.reason


def test_no_assertion_goes_ungraded() -> None:
    """Every built-in kind has its own check and a subject whose grader grades it, and every assertion gets exactly
    one grade (tests/cases/test_assertion_kinds.py holds the rest of what a kind declares)."""
    for kind, model in ASSERTION_KINDS.items():
        assert not inspect.isabstract(model) and model.subject in ("state", "reply"), kind
    everything = case_data(
        {"row_count": {"table": "refunds", "equals": 1}}, {"field_equals": {"table": "refunds", "field": "amount", "equals": 60}},
        {"sql": {"query": "SELECT COUNT(*) FROM refunds", "expect": 1}},
        {"net_change": {"table": "refunds", "column": "amount", "equals": 60}}, {"unchanged_except": {"tables": ["refunds"]}},
        {"expect_state": {"table": "refunds", "absent": [{"amount": 61}]}},
        {"reply_contains": "refund"}, {"reply_not_contains": "error"}, {"reply_matches": "R-\\d+"},
        {"reply_mentions": {"table": "refunds", "column": "id"}},
        {"refund_matches_approval": {"order_id": "O-1"}}, {"approval_read_first": {"order_id": "O-1"}}, "reply_quotes_refund",
        {"apologises": {}}, "not_registered_anywhere")
    record = one_trial(everything, BASE)  # no judge: `apologises` fails closed
    graded = [g for g in record.grades if g.grader != "rules"]
    assert len(graded) == len(everything["assertions"])
    failed = {g.name: g.reason for g in graded if not g.passed}
    assert set(failed) == {"apologises()", "not_registered_anywhere()"}
    assert "no grader 'not_registered_anywhere' is registered on this domain" in failed["not_registered_anywhere()"]


# --- model-based graders ------------------------------------------------------------------------------------


def judge_on(server: FakeModelServer) -> Judge:
    return Judge(chat_model("openai:judge-model", base_url=server.openai_url, retry=FAST), prices=PRICES)


@pytest.mark.parametrize(("answer", "passed", "decided", "words"), [
    ('{"score": 5, "why": "says sorry"}', True, True, "apology scored 5 (passes at 4): says sorry"),
    ('{"score": 2, "why": "curt"}', False, True, "apology scored 2 (passes at 4): curt"),
    ("It apologises nicely, 5/5.", False, False, "the grader raised ValueError: not a single JSON object"),
    ('{"score": 9}', False, True, "the judge gave no score from 1 to 5"),
])
def test_a_judge_grader_asks_the_runs_judge_model(answer: str, passed: bool, decided: bool, words: str) -> None:
    with FakeModelServer(scripted([Turn(text=answer, input_tokens=100, output_tokens=10)])) as server:
        record = one_trial(case_data({"apologises": {}}), BASE, judge=judge_on(server))
        [request] = server.requests
    g = grade(record, "apologises")
    assert (g.grader, g.passed) == ("judge", passed) and words in g.reason
    assert g.details["judge_model"] == "openai:judge-model"
    assert request.seed is not None and g.details["seed"] == request.seed
    assert record.outcome == ("pass" if passed else "fail")
    assert not passed or record.failure is None
    assert passed or (record.failure is not None and record.failure.category == "judge_failure")
    # the judge's spending is the trial's judge usage, not the agent's
    assert record.judge_usage is not None and record.judge_usage.input_tokens == 100
    assert record.judge_usage.cost == pytest.approx(100 * 3.0 / 1e6 + 10 * 6.0 / 1e6)
    prompt = request.messages[-1]["content"]
    assert "<<<DATA " in prompt and "Sorry for the trouble" in prompt
    # calibration reads it as a judge criterion; a grader that failed closed did not decide
    [judgment] = [j for j in judgments_from_grades("refund", 0, record.grades) if j.criterion == "apologises()"]
    assert (judgment.passed, judgment.decided) == (passed, decided)


def test_a_judge_grader_without_a_judge_model_fails_closed_without_running() -> None:
    calls: list[str] = []

    @grader(kind="judge")
    async def noted(view: TrialView, judge: Any) -> bool:
        """Records that it ran."""
        calls.append("ran")
        return True

    record = one_trial(case_data("noted"), with_graders(noted))
    g = grade(record, "noted")
    assert not g.passed and "this run has no judge model (pass --judge" in g.reason
    assert calls == [] and record.outcome == "fail"


def test_a_judge_provider_outage_is_an_infrastructure_error_not_a_failed_grade() -> None:
    with FakeModelServer(scripted([Turn(always=503)])) as server, pytest.raises(InfrastructureError):
        one_trial(case_data({"apologises": {}}), BASE, judge=judge_on(server))


def test_judge_trial_grades_rubric_and_custom_judge_assertions_together() -> None:
    rubric = {"criteria": [{"name": "clear", "question": "Is it clear?", "levels": {1: "no", 5: "yes"}}]}
    answers = iter(['{"criteria": {"clear": {"evidence": "ok", "score": 5}}}', '{"score": 4, "why": "ok"}'])
    with FakeModelServer(lambda request: Turn(text=next(answers))) as server:
        loaded = Case.model_validate({**case_data({"apologises": {}}), "domain": "test", "judge": rubric})
        view = TrialView(case=loaded, calls=[], messages=[Message(role="agent", text="Sorry!", at=1.0)], diff=Diff(),
                         end_reason="completed", usage=Usage(), agent_seconds=0.0, query=None, graders=BASE.graders)
        judged = asyncio.run(judge_trial(view, judge_on(server), seed=3))
    assert [(g.name, g.passed) for g in judged.grades] == [("judge: clear", True), ("apologises()", True)]
    assert judged.usage.model_calls == 2


# --- declaring and registering -------------------------------------------------------------------------------


def _sync_judge(view: TrialView, judge: Any) -> bool:
    """x"""
    return True


async def _async_state(view: TrialView) -> bool:
    """x"""
    return True


def _no_hint(view: TrialView, order_id) -> bool:  # type: ignore[no-untyped-def]
    """x"""
    return True


def _reserved(view: TrialView, description: str) -> bool:
    """x"""
    return True


def _row_count(view: TrialView) -> bool:
    """x"""
    return True


def _undocumented(view: TrialView) -> bool:
    return True


@pytest.mark.parametrize(("func", "kind", "words"), [
    (_sync_judge, "judge", "a judge grader asks a model, so it is `async def`"),
    (_async_state, "state", "only judge graders are async"),
    (_no_hint, "state", "parameter 'order_id' needs a type hint"),
    (_reserved, "state", "'description' is a field of every assertion"),
    (_undocumented, "state", "a docstring saying what it checks is required"),
    (_row_count, "rules", "kind must be one of state, trajectory, reply, judge"),
])
def test_a_grader_that_cannot_be_checked_against_cases_is_refused_when_declared(func: Any, kind: Any, words: str) -> None:
    with pytest.raises(TypeError, match=words.replace("(", r"\(").replace(")", r"\)").replace("`", ".")):
        grader(func, kind=kind)


def test_builtin_names_and_undeclared_or_duplicate_graders_are_refused() -> None:
    with pytest.raises(TypeError, match="that is a built-in assertion"):
        grader(_row_count, kind="state", name="row_count")
    with pytest.raises(DomainError, match="_row_count is not a declared grader; decorate it with @grader"):
        with_graders(_row_count)
    with pytest.raises(DomainError, match="two graders are named 'raises'"):
        with_graders(raises, raises)


# --- hashes -----------------------------------------------------------------------------------------------


def test_the_domain_hash_covers_grader_code_and_the_case_hash_its_parameters(suite: Any) -> None:
    folder = suite(case_data({"refund_matches_approval": {"order_id": "O-1"}}))
    before = load_suite(str(folder))
    suite_hash, case_hashes = before.content_hash(), before.case_hashes()  # now: hashes read the source on disk
    [domain_hash] = [d.content_hash() for d in before.domains.values()]
    domain_file = folder.parent / "domain.py"
    source = domain_file.read_text()
    domain_file.write_text(source.replace("ok = abs(refunded - approved[0][0]) <= tolerance",
                                          "ok = abs(refunded - approved[0][0]) < tolerance + 0.01"))
    edited = load_suite(str(folder))
    assert edited.content_hash() != suite_hash
    assert [d.content_hash() for d in edited.domains.values()] != [domain_hash]
    assert edited.case_hashes() == case_hashes  # the case did not change; its domain did (changed_cases says so)
    domain_file.write_text(source.replace('@grader(kind="trajectory")', '@grader(kind="state")'))
    assert load_suite(str(folder)).content_hash() != suite_hash  # a grader's kind is part of its code
    domain_file.write_text(source)
    assert load_suite(str(folder)).content_hash() == suite_hash
    retuned = load_suite(str(suite(case_data({"refund_matches_approval": {"order_id": "O-1", "tolerance": 5}}))))
    assert retuned.case_hashes() != case_hashes


# --- re-grading, lint, regression cases -------------------------------------------------------------------------


def test_regrade_runs_custom_graders_again_and_carries_judge_grades_over(suite: Any, tmp_path: Path) -> None:
    assertions = [{"refund_matches_approval": {"order_id": "O-1"}}, {"apologises": {}}]
    folder = suite(case_data(*assertions))
    answers = scripted([Turn(text='{"score": 5, "why": "sorry"}')])
    with FakeModelServer(answers) as server:
        source = run(folder, agents.alternating, 2, tmp_path / "source", judge=judge_on(server))
    assert [r.outcome for r in source] == ["pass", "fail"]
    # loosen the state check for overpayments of up to 40, keep the judge assertion, add a new one
    suite(case_data({"refund_matches_approval": {"order_id": "O-1", "tolerance": 40}}, {"apologises": {}}))
    report = regrade_run(tmp_path / "source", tmp_path / "regraded")
    assert report.custom_graders == {"../domain.py": {"apologises": "judge", "approval_read_first": "trajectory",
                                                         "refund_matches_approval": "state", "reply_quotes_refund": "reply"}}
    regraded = sorted((TrialRecord.model_validate_json(x) for x in (tmp_path / "regraded" / "trials.jsonl").read_text()
                       .splitlines()), key=lambda r: r.trial)
    assert [r.outcome for r in regraded] == ["pass", "pass"]
    assert grade(regraded[1], "refund_matches_approval").reason == "refunded 100 on O-1, approved 60"
    carried = grade(regraded[0], "apologises")
    assert carried.passed and carried.details["regrade"].startswith("carried over")
    assert [c.model_dump() for c in report.outcome_changes] == [
        {"case_id": "refund", "trial": 1, "before": "fail", "after": "pass"}]

    suite(case_data({"refund_matches_approval": {"order_id": "O-1"}}, {"apologises": {"min_score": 5}}))
    regrade_run(tmp_path / "source", tmp_path / "regraded-2")
    again = TrialRecord.model_validate_json((tmp_path / "regraded-2" / "trials.jsonl").read_text().splitlines()[0])
    g = grade(again, "apologises")
    assert not g.passed and "no grade for this assertion to carry over" in g.reason


def test_lint_reports_unknown_graders_and_bad_parameters_and_counts_custom_state_checks(suite: Any) -> None:
    folder = suite(case_data({"refund_matches_approvall": {"order_id": "O-1"}}, case_id="typo"),
                   case_data({"refund_matches_approval": {"order_id": "O-1", "extra": 1}}, {"apologises": {"min_score": "high"}},
                             case_id="params"),
                   case_data({"refund_matches_approval": {"order_id": "O-1"}}, case_id="custom-state-only"),
                   case_data("reply_quotes_refund", case_id="prose-only"))
    report = lint_suite(str(folder))
    found = {(f.code, f.case_id, f.field) for f in report.findings}
    assert ("unknown-grader", "typo", "assertions.0.refund_matches_approvall") in found
    assert ("bad-grader-params", "params", "assertions.0.refund_matches_approval.extra") in found
    assert ("bad-grader-params", "params", "assertions.1.apologises.min_score") in found
    assert ("no-state-assertion", "prose-only", "assertions") in found
    assert not [f for f in report.findings if f.case_id == "custom-state-only"]
    r = CliRunner().invoke(main, ["cases", "lint", str(DATA / "cases")])
    assert r.exit_code == 0, r.output


def test_a_regression_case_from_a_failed_trial_keeps_its_custom_assertions(tmp_path: Path) -> None:
    run(DATA / "cases", agents.alternating, 2, tmp_path / "run")
    out = tmp_path / "regression" / "refund-o1-regression-t1.yaml"
    out.parent.mkdir()
    r = CliRunner().invoke(main, ["cases", "from-failure", str(tmp_path / "run"), "refund-o1", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    written = yaml.safe_load(out.read_text())
    assert written["assertions"][:3] == [{"refund_matches_approval": {"order_id": "O-1"}},
                                         {"approval_read_first": {"order_id": "O-1"}}, {"reply_quotes_refund": {}}]
    assert json.dumps(written)  # plain data
