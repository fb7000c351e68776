"""passhat as a library: evaluate() is the one code path of a run, and what it returns is typed."""

from __future__ import annotations

import asyncio
import inspect
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import passhat
import passhat.api
from passhat.api import Progress, Run
from passhat.errors import PasshatError
from passhat.models import Comparison, GateResult, Manifest, Summary

EXAMPLES = Path(__file__).parents[2] / "examples"
CASES = ["refund-4812", "refund-4812-drop-response", "permission-friend-order"]


def _outcomes(folder: Path) -> dict[tuple[str, int], str]:
    return {(r.case_id, r.trial): r.outcome for r in Run.open(folder).records()}


def test_evaluate_writes_the_folder_the_cli_writes(tmp_path: Path, cli: Any) -> None:
    by_cli = cli("run", "refunds", "--agent", "hasty", "--trials", 2, "--out", tmp_path / "cli", "-q", "--no-report")
    assert by_cli.exit_code == 0, by_cli.output
    run = passhat.evaluate("refunds", "hasty", trials=2, out=tmp_path / "lib")
    for name in ("manifest.json", "trials.jsonl", "summary.json"):
        assert (tmp_path / "cli" / name).is_file() and (run.folder / name).is_file()
    cli_manifest, lib_manifest = (Manifest.load(f / "manifest.json") for f in (tmp_path / "cli", run.folder))
    volatile = {"started_at", "finished_at"}
    assert cli_manifest.model_dump(exclude=volatile) == lib_manifest.model_dump(exclude=volatile)
    assert _outcomes(tmp_path / "cli") == _outcomes(run.folder)
    cli_summary = Summary.load(tmp_path / "cli" / "summary.json")
    assert {k: v.estimate for k, v in cli_summary.suite.pass_hat_k.items()} == \
        {k: v.estimate for k, v in run.summary.suite.pass_hat_k.items()}
    assert cli_summary.strata.keys() == run.summary.strata.keys()  # every tag key, as the report needs


def test_the_cli_runs_through_evaluate(tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """One code path: `passhat run` parses, calls passhat.api.evaluate, prints and exits by what it returns."""
    done = passhat.evaluate("refunds", "hasty", trials=2, out=tmp_path / "done", gate=EXAMPLES / "gate.yaml",
                            cases=CASES)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def fake_evaluate(*args: Any, **kwargs: Any) -> Run:
        calls.append((args, kwargs))
        kwargs["progress"](Progress(0, 6, suite="refunds"))
        return Run.open(done.folder)  # nothing runs: whatever the CLI shows must come from here

    monkeypatch.setattr(passhat.api, "evaluate", fake_evaluate)
    result = cli("run", "refunds", "--agent", "careful", "--trials", 3, "--out", tmp_path / "never", "--no-report",
                 "--gate", EXAMPLES / "gate.yaml", "--by", "risk", "--tag", "risk=high", "-j", 2)
    (args, kwargs), = calls
    suite, agent, options = args
    assert (suite, agent) == ("refunds", "careful") and kwargs["out"] == tmp_path / "never"
    assert options.trials == 3 and options.concurrency == 2
    assert options.gate == EXAMPLES / "gate.yaml" and options.by == ("risk",) and options.tags == ("risk=high",)
    assert options.model_fields_set == {"trials", "concurrency", "gate", "by", "tags"}  # what was typed, nothing else
    assert not (tmp_path / "never").exists()
    assert result.exit_code == 1  # the gate result of the run evaluate returned: FAIL
    assert "gate FAIL" in result.output and "hasty" in result.output  # the returned run's agent, not --agent


def test_python_agents_of_every_shape(tmp_path: Path) -> None:
    notes = Path(__file__).parents[1] / "data" / "notes"

    async def async_agent(ep: Any) -> str:
        await ep.call("add_note", {"title": "call mom", "priority": 2})
        return "added"

    def sync_agent(ep: Any) -> str:
        ep.call("add_note", {"title": "call mom", "priority": 2})
        return "added"

    class Agent:
        async def __call__(self, ep: Any) -> str:
            return await async_agent(ep)

    for i, agent in enumerate([async_agent, sync_agent, Agent(), Agent]):
        run = passhat.evaluate(notes / "cases", agent, trials=2, out=tmp_path / f"r{i}", sanity=False)
        assert run.pass_hat_k(2).estimate == 1.0, (agent, run.failure_report())
    assert Run.open(tmp_path / "r0").manifest.agent.endswith("test_python_agents_of_every_shape.<locals>.async_agent")
    assert Run.open(tmp_path / "r2").manifest.agent.endswith(".Agent()")
    named = passhat.evaluate(notes / "cases", async_agent, trials=1, out=tmp_path / "named", name="mine", sanity=False)
    assert named.manifest.agent == "mine"
    with pytest.raises(PasshatError, match="isolate='process' needs the agent as a spec"):
        passhat.evaluate(notes / "cases", async_agent, isolate="process", out=tmp_path / "iso")


def test_run_gives_typed_access_and_readable_failures(tmp_path: Path) -> None:
    run = passhat.evaluate("refunds", "hasty", trials=2, out=tmp_path / "hasty", cases=CASES, on_warning=print)
    assert isinstance(run.manifest, Manifest) and isinstance(run.summary, Summary)
    assert run.manifest.selection is not None and sorted(run.manifest.selection.cases) == sorted(CASES)
    iv = run.pass_hat_k(2)
    assert iv.low == iv.ci_low and iv.low is not None and iv.low <= iv.estimate <= iv.high  # type: ignore[operator]
    assert run.pass_at_k(1).estimate == run.pass_hat_k(1).estimate
    with pytest.raises(PasshatError, match="no case has 3 graded trials"):
        run.pass_hat_k(3)
    assert sum(1 for _ in run.records()) == 6
    failures = {f.case_id: f for f in run.failures()}
    assert set(failures) == {"refund-4812-drop-response", "permission-friend-order"}
    dup = failures["refund-4812-drop-response"]
    assert (dup.passed, dup.graded, dup.trial, dup.category) == (0, 2, 0, "duplicate_write")
    assert dup.check is not None and "expected 1, actual 2" in dup.check
    report = run.failure_report()
    assert "2 of 3 case(s) did not pass every trial" in report and "refund-4812-drop-response: 0/2 passed" in report
    reopened = Run.open(run.folder)
    assert reopened.summary == run.summary and reopened.manifest == run.manifest
    assert "pass^1 0.333" in repr(run)


def test_compare_and_gate_return_models(tmp_path: Path) -> None:
    gate = EXAMPLES / "gate.yaml"
    careful = passhat.evaluate("refunds", "careful", trials=2, out=tmp_path / "careful", cases=CASES, gate=gate)
    hasty = passhat.evaluate("refunds", "hasty", trials=2, out=tmp_path / "hasty", cases=CASES)
    assert isinstance(careful.gate_result, GateResult) and careful.gate_result.outcome in ("PASS", "INCONCLUSIVE")
    assert GateResult.load(careful.folder / "gate.json") == careful.gate_result
    comparison = hasty.compare(careful)
    assert isinstance(comparison, Comparison)
    assert set(comparison.new_failures) == {"refund-4812-drop-response", "permission-friend-order"}
    assert comparison.pass_hat_k(2).delta < 0 and comparison.pass_hat_k(2).low <= comparison.pass_hat_k(2).delta
    result = hasty.gate(gate, baseline=careful)
    assert result.outcome == "FAIL"
    assert not result.gate.preregistered and result.failing_rules()[0].outcome == "FAIL"
    assert GateResult.load(hasty.folder / "gate.json") == result


def test_progress_warnings_and_bad_input(tmp_path: Path) -> None:
    seen: list[Progress] = []
    warned: list[str] = []
    passhat.evaluate("refunds", "careful", trials=2, out=tmp_path / "p", cases=CASES[:2], progress=seen.append,
                     on_warning=warned.append)
    assert [p.done for p in seen] == [0, 1, 2, 3, 4] and {p.total for p in seen} == {4}
    assert seen[0].record is None and all(p.record is not None for p in seen[1:]) and seen[0].suite == "refunds"
    with pytest.raises(PasshatError, match="no case 'nope' in suite 'refunds'"):
        passhat.evaluate("refunds", "careful", out=tmp_path / "bad", cases=["nope"])
    with pytest.raises(PasshatError, match="not a built-in agent"):
        passhat.evaluate("refunds", "nobody", out=tmp_path / "bad")
    assert not (tmp_path / "bad").exists()  # bad input is refused before anything is written


def test_default_folders_never_collide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    a = passhat.evaluate("refunds", "careful", trials=1, cases=CASES[:1], sanity=False)
    b = passhat.evaluate("refunds", "careful", trials=1, cases=CASES[:1], sanity=False)
    assert a.folder != b.folder and a.folder.parent == b.folder.parent == Path("runs")
    assert a.folder.name.startswith("refunds-careful-")


def test_async_variant_and_a_running_loop(tmp_path: Path) -> None:
    async def main() -> Run:
        with pytest.raises(PasshatError, match="evaluate_async"):
            passhat.evaluate("refunds", "careful", out=tmp_path / "x")
        return await passhat.evaluate_async("refunds", "careful", trials=1, cases=CASES[:1], out=tmp_path / "a")

    assert asyncio.run(main()).pass_hat_k(1).estimate == 1.0
    sync, asynchronous = inspect.signature(passhat.evaluate), inspect.signature(passhat.evaluate_async)
    assert sync.parameters == asynchronous.parameters


def test_import_passhat_stays_cheap() -> None:
    code = ("import sys, passhat; heavy = [m for m in ('pydantic', 'passhat.api', 'passhat.models', 'numpy') "
            "if m in sys.modules]; print(heavy); assert passhat.Run.__name__ == 'Run'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_summary_json_is_the_models_dump(tmp_path: Path) -> None:
    run = passhat.evaluate("refunds", "careful", trials=2, cases=CASES, out=tmp_path / "r", sanity=False)
    on_disk = json.loads((run.folder / "summary.json").read_text())
    assert on_disk["schema_version"] == "passhat.summary/3" and "format" not in on_disk
    assert json.loads(run.summary.to_json()) == on_disk
    assert on_disk["suite"]["pass_hat_k"]["2"]["ci_low"] == run.summary.suite.pass_hat_k[2].low


def warnings_with_records_written(out: Path) -> tuple[list[tuple[str, int]], Callable[[str], None]]:
    """An ``on_warning`` that keeps each warning with the number of records written when it came: 0 means it came
    before the first trial."""
    said: list[tuple[str, int]] = []

    def warned(message: str) -> None:
        said.append((message, len((out / "trials.jsonl").read_text().splitlines())
                     if (out / "trials.jsonl").exists() else 0))

    return said, warned


def test_judge_cases_without_a_judge_model_are_said_before_the_first_trial(tmp_path: Path) -> None:
    """A judge: section fails closed without --judge; the run used to say so only in each failed trial's grade."""
    folder = tmp_path / "cases"
    folder.mkdir()
    notes = Path(__file__).parents[1] / "data" / "notes"
    for name in ("domain.py", "fixture.yaml"):
        (tmp_path / name).write_text((notes / name).read_text())
    (folder / "add-note.yaml").write_text(
        (notes / "cases" / "add-note.yaml").read_text()
        + "judge: {criteria: [{name: tone, question: Is it polite?, levels: {1: rude, 5: polite}}]}\n")
    out = tmp_path / "run"
    said, warned = warnings_with_records_written(out)

    run = passhat.evaluate(folder, f"{notes / 'agents.py'}:good", trials=1, out=out, sanity=False, on_warning=warned)
    assert said == [("1 case(s) have a judge: section but this run has no judge model (--judge MODEL): add-note — "
                     "their judge criteria fail every trial", 0)]
    assert run.summary.cases[0].successes == 0


def test_custom_judge_graders_without_a_judge_model_are_said_before_the_first_trial(tmp_path: Path) -> None:
    """A required assertion on a grader of kind `judge` fails closed without --judge, as a judge: section does; the
    run said so for the section only. An optional one (required: false) decides nothing and is not named."""
    data = Path(__file__).parents[1] / "data" / "refund_approvals"
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in ("domain.py", "fixture.yaml"):
        (tmp_path / name).write_text((data / name).read_text())
    case = (data / "cases" / "refund-o1.yaml").read_text()
    (folder / "refund-o1.yaml").write_text(case + "  - apologises: {min_score: 3}\n")
    (folder / "refund-o2.yaml").write_text(case.replace("id: refund-o1", "id: refund-o2")
                                           + "  - apologises: {required: false}\n")
    (folder / "refund-o3.yaml").write_text(
        case.replace("id: refund-o1", "id: refund-o3")
        + "judge: {criteria: [{name: tone, question: Is it polite?, levels: {1: rude, 5: polite}}]}\n")
    out = tmp_path / "run"
    said, warned = warnings_with_records_written(out)

    run = passhat.evaluate(folder, f"{data / 'agents.py'}:careful", trials=1, out=out, sanity=False, on_warning=warned)
    assert said == [("2 case(s) have a judge: section or an assertion on a judge grader (apologises) but this run has "
                     "no judge model (--judge MODEL): refund-o1, refund-o3 — their judge criteria and judge-graded "
                     "assertions fail every trial", 0)]
    assert {c.id: c.successes for c in run.summary.cases} == {"refund-o1": 0, "refund-o2": 1, "refund-o3": 0}


def test_a_judge_grader_alone_is_named_as_such(tmp_path: Path) -> None:
    from passhat.api.evaluation import no_judge_warning
    from passhat.cases import load_suite

    data = Path(__file__).parents[1] / "data" / "refund_approvals"
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in ("domain.py", "fixture.yaml"):
        (tmp_path / name).write_text((data / name).read_text())
    (folder / "refund-o1.yaml").write_text((data / "cases" / "refund-o1.yaml").read_text() + "  - apologises\n")
    assert no_judge_warning(load_suite(folder)) == (
        "1 case(s) have an assertion on a judge grader (apologises) but this run has no judge model "
        "(--judge MODEL): refund-o1 — their judge-graded assertions fail every trial")
    (folder / "refund-o1.yaml").write_text((data / "cases" / "refund-o1.yaml").read_text())
    assert no_judge_warning(load_suite(folder)) is None


def test_a_warning_points_at_the_line_that_called_evaluate(tmp_path: Path) -> None:
    """Under pytest a PasshatWarning names the caller's file and line, wherever in the run it was raised:
    before the first trial (a gate bar no run of these cases can pass: runner/run.py) and as a record became
    durable (a planned fault that did not apply: runner/commit.py)."""
    import shutil

    notes = Path(__file__).parents[1] / "data" / "notes"
    folder = tmp_path / "cases"
    folder.mkdir()
    shutil.copy(notes / "domain.py", tmp_path / "domain.py")
    shutil.copy(notes / "fixture.yaml", tmp_path / "fixture.yaml")
    (folder / "add-note.yaml").write_text((notes / "cases" / "add-note.yaml").read_text()
                                          + "faults: [{tool: list_notes, kind: malformed, field: bodyy, value: x}]\n")
    gate = tmp_path / "gate.yaml"
    gate.write_text("rules:\n  - pass_hat_k: {k: 1, min: 0.95}\n")
    with pytest.warns(passhat.PasshatWarning) as caught:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        passhat.evaluate(folder, f"{notes / 'agents.py'}:good", trials=1, out=tmp_path / "run", sanity=False, gate=gate)
    said = {str(w.message).split(":")[0]: (w.filename, w.lineno) for w in caught}
    assert set(said) == {"gate rule 0 (pass^1 ≥ 0.95)", "add-note"}, said
    assert set(said.values()) == {(__file__, line)}
