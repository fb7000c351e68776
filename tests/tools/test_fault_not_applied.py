"""A planned fault that changes nothing on a call says so: ``fault_not_applied`` on the call, a warning in the
run's output, a line in the terminal report (issue 24). Before, a ``malformed`` fault on a field the result
did not hold recorded the fault as injected and tested nothing."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from passhat.tools import Fault, ToolBoundary, ToolContext
from passhat.world import World

NOTES = Path(__file__).parents[1] / "data" / "notes"


@pytest.fixture
def boundary_for(notes_domain: Any) -> Any:
    def make(*faults: Fault) -> ToolBoundary:
        world = World.restore(notes_domain.image("default"), 1)
        return ToolBoundary(notes_domain.tool_list(), ToolContext(world, identity="alice"), faults=faults)

    return make


def call(b: ToolBoundary, name: str, args: Any = None) -> Any:
    return asyncio.run(b.call(name, args or {}))


def test_a_field_absent_from_this_result_is_flagged_and_the_result_left_alone(boundary_for: Any) -> None:
    # list_notes is declared `-> list[dict]`: any name could be in it, so only the result itself can tell
    b = boundary_for(Fault(tool="list_notes", kind="malformed", field="bodyy", value="x"))
    rec = call(b, "list_notes")
    assert rec.ok and rec.result == [{"id": "N-1", "title": "groceries", "body": "milk"}]
    assert rec.hidden_result is None and rec.fault == "malformed on list_notes call 1"
    assert rec.fault_not_applied == "no field 'bodyy' in the result (a list of 1, first: fields: id, title, body)"


def test_a_replacement_equal_to_the_value_is_flagged(boundary_for: Any) -> None:
    b = boundary_for(Fault(tool="list_notes", kind="malformed", field="body", value="{value}"))
    assert call(b, "list_notes").fault_not_applied == "the replacement equals the original value of 'body'"


def test_a_corrupting_fault_is_not_flagged(boundary_for: Any) -> None:
    b = boundary_for(Fault(tool="list_notes", kind="malformed", field="body", value=3))
    rec = call(b, "list_notes")
    assert rec.result[0]["body"] == 3 and rec.fault_not_applied is None


@pytest.mark.parametrize("kind", ["malformed", "drop_response"])
def test_a_fault_on_a_call_that_failed_anyway_is_flagged(boundary_for: Any, kind: str) -> None:
    b = boundary_for(Fault(tool="get_note", kind=kind, field="body" if kind == "malformed" else None))
    rec = call(b, "get_note", {"note_id": "N-9"})
    assert rec.status == "tool_error" and "not found" in rec.error
    assert rec.fault_not_applied == "the call failed (tool_error), so there was no answer for the fault to change"


@pytest.mark.parametrize("kind", ["timeout", "error", "latency"])
def test_faults_that_always_act_are_never_flagged(boundary_for: Any, kind: str) -> None:
    b = boundary_for(Fault(tool="get_note", kind=kind, seconds=0.001 if kind == "latency" else 0))
    assert call(b, "get_note", {"note_id": "N-9"}).fault_not_applied is None


UNREACHED = ("[{tool: get_note, kind: timeout}, {tool: add_note, kind: error, on_call: 2}, "
             "{tool: list_notes, kind: latency, seconds: 0.001}]")
"""A fault its agent reaches (latency on list_notes) and two it never does."""


def add_note_with(tmp_path: Path, faults: str) -> Path:
    """The notes suite's add-note case with ``faults`` (a YAML flow list), in a folder of its own: its cases folder."""
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    shutil.copy(NOTES / "domain.py", tmp_path / "domain.py")
    shutil.copy(NOTES / "fixture.yaml", tmp_path / "fixture.yaml")
    (folder / "add-note.yaml").write_text((NOTES / "cases" / "add-note.yaml").read_text() + f"faults: {faults}\n")
    return folder


def test_the_run_warns_and_the_report_shows_it(tmp_path: Path) -> None:
    from passhat import evaluate
    from passhat.report.terminal import print_summary

    folder = add_note_with(tmp_path, "[{tool: list_notes, kind: malformed, field: bodyy, value: x}]")
    warnings: list[str] = []
    run = evaluate(folder, f"{NOTES / 'agents.py'}:good", trials=2, out=tmp_path / "run", sanity=False,
                   on_warning=warnings.append)
    assert warnings == ["add-note: the planned fault malformed on list_notes call 1 did not apply in trial 0 (step 1): "
                        "no field 'bodyy' in the result (a list of 1, first: fields: id, title, body) — that trial did "
                        "not test it; each such call is flagged fault_not_applied in trials.jsonl"]
    records = [json.loads(line) for line in (run.folder / "trials.jsonl").read_text().splitlines()]
    assert [r["calls"][0]["fault_not_applied"] is not None for r in records] == [True, True]
    (case,) = run.summary.cases
    assert case.faults_not_applied == {"malformed on list_notes call 1: no field 'bodyy' in the result (a list of 1, "
                                       "first: fields: id, title, body)": 2}
    console = Console(record=True, width=200)
    print_summary(run.summary, console)
    text = console.export_text()
    assert "warning: 1 planned fault(s) did not apply in some trials, which therefore did not test them:" in text
    assert "add-note: malformed on list_notes call 1: no field 'bodyy' in the result" in text and "(2 of 2 trial(s))" in text


def test_a_fault_no_call_reached_is_warned_about(tmp_path: Path) -> None:
    """A fault on a call the agent never made (a tool its task does not need, a second call it never makes) acted
    on nothing: the trial passed without testing it, and the run says so; a fault that acted does not warn."""
    from passhat import evaluate

    folder = add_note_with(tmp_path, UNREACHED)
    warnings: list[str] = []
    run = evaluate(folder, f"{NOTES / 'agents.py'}:good", trials=2, out=tmp_path / "run", sanity=False,
                   on_warning=warnings.append)
    assert run.summary.cases[0].successes == 2  # passing, which is why it must be said
    counted = "the trials that never reached it are counted per case in summary.json (faults_not_reached)"
    assert warnings == [
        "add-note: the planned fault timeout on get_note call 1 was never reached in trial 0: the agent made 0 call(s) "
        f"of get_note — that trial did not test it; {counted}",
        "add-note: the planned fault error on add_note call 2 was never reached in trial 0: the agent made 1 call(s) "
        f"of add_note — that trial did not test it; {counted}"]


def _unreached_run(tmp_path: Path, trials: int = 2) -> Any:
    """add-note with a fault its agent reaches (latency on list_notes) and two it never does."""
    from passhat import evaluate

    folder = add_note_with(tmp_path, UNREACHED)
    return evaluate(folder, f"{NOTES / 'agents.py'}:good", trials=trials, out=tmp_path / "run", sanity=False,
                    on_warning=lambda _: None)


NOT_REACHED = {"timeout on get_note call 1": 2, "error on add_note call 2": 2}


def test_never_reached_is_counted_in_the_summary_and_shown(tmp_path: Path) -> None:
    """The warning alone was gone once the run ended: summary.json now counts, per case and planned fault, the
    graded trials that never reached it, and `passhat show` and the report say so."""
    from click.testing import CliRunner

    from passhat.cli import main
    from passhat.models import Manifest
    from passhat.report.html import write_report
    from passhat.report.terminal import print_summary

    run = _unreached_run(tmp_path)
    (case,) = run.summary.cases
    assert case.faults_not_reached == NOT_REACHED  # the latency fault acted in both trials: not listed
    manifest = Manifest.load(run.folder / "manifest.json")
    assert manifest.case_meta("add-note").faults == ["timeout on get_note call 1", "error on add_note call 2",
                                                     "latency on list_notes call 1"]
    on_disk = json.loads((run.folder / "summary.json").read_text())
    assert on_disk["cases"][0]["faults_not_reached"] == NOT_REACHED
    console = Console(record=True, width=200)
    print_summary(run.summary, console)
    text = console.export_text()
    assert ("warning: 2 planned fault(s) were never reached in some trials (no call got to them), which therefore did "
            "not test them:") in text
    assert "add-note: timeout on get_note call 1 (2 of 2 graded trial(s))" in text
    shown = CliRunner().invoke(main, ["show", str(run.folder)])
    assert shown.exit_code == 0, shown.output
    assert "add-note: error on add_note call 2 (2 of 2 graded trial(s))" in shown.output
    write_report(run.folder)
    page = (run.folder / "report.html").read_text()
    assert "⚠ timeout on get_note call 1 — never reached in 2 of 2 graded trial(s)" in page
    assert 'data-faults="[&#34;timeout on get_note call 1&#34;' in page  # what a trial's view checks its calls against


def test_never_reached_is_the_same_from_the_records_alone(tmp_path: Path) -> None:
    """Recomputed from trials.jsonl (a summary deleted, a re-grade into a new folder), the counts are the run's:
    they come from the records' calls and the manifest's plan, not from what the run saw while it ran."""
    from passhat.regrade.run import regrade_run
    from passhat.results.summary import summarize_run

    run = _unreached_run(tmp_path)
    written = (run.folder / "summary.json").read_bytes()
    (run.folder / "summary.json").unlink()
    recomputed = summarize_run(run.folder, by=list(run.summary.strata))  # the run's strata: its tag keys
    assert recomputed.cases[0].faults_not_reached == NOT_REACHED
    assert (run.folder / "summary.json").read_bytes() == written
    regrade_run(run.folder, tmp_path / "regraded")
    again = json.loads((tmp_path / "regraded" / "summary.json").read_text())
    assert again["cases"][0]["faults_not_reached"] == NOT_REACHED


def test_a_resumed_run_counts_the_trials_it_did_before(tmp_path: Path) -> None:
    """A resumed run's summary is read from trials.jsonl (its earlier records were never seen by this process):
    it counts the earlier trial's missed faults too."""
    from passhat import evaluate

    run = _unreached_run(tmp_path)
    path = run.folder / "trials.jsonl"
    path.write_text(path.read_text().splitlines(keepends=True)[0])  # killed after its first trial
    (run.folder / "summary.json").unlink()
    resumed = evaluate(tmp_path / "cases", f"{NOTES / 'agents.py'}:good", trials=2, out=run.folder, sanity=False,
                       resume=True, on_warning=lambda _: None)
    assert resumed.summary.cases[0].faults_not_reached == NOT_REACHED


def test_an_infrastructure_error_is_not_counted_as_a_trial_that_missed_a_fault(tmp_path: Path) -> None:
    """A trial that ended in an infrastructure error is no trial of the agent's: it is in `errors`, and the
    counts stay of graded trials."""
    from passhat.results.summary import summarize_run

    run = _unreached_run(tmp_path)
    path = run.folder / "trials.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[0].update(outcome="error", end_reason="harness_error", grades=[], error="the sandbox died")
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    case = summarize_run(run.folder).cases[0]
    assert case.errors == 1 and case.faults_not_reached == {"timeout on get_note call 1": 1,
                                                             "error on add_note call 2": 1}


def test_a_run_that_reached_every_fault_has_the_summary_it_had(tmp_path: Path) -> None:
    """Only the field is new: a summary with every planned fault reached holds no faults_not_reached key."""
    from passhat import evaluate

    folder = add_note_with(tmp_path, "[{tool: list_notes, kind: latency, seconds: 0.001}]")
    run = evaluate(folder, f"{NOTES / 'agents.py'}:good", trials=2, out=tmp_path / "run", sanity=False)
    assert "faults_not_reached" not in json.loads((run.folder / "summary.json").read_text())["cases"][0]


def test_not_reached_counts_only_calls_that_got_to_the_fault() -> None:
    from passhat.tools.boundary import ToolCall, not_reached

    fault = Fault(tool="add_note", kind="error", on_call=1)
    refused = ToolCall(step=1, tool="add_note", arguments={}, status="invalid_arguments")
    assert not_reached([fault], [refused]) == [(fault, 0)]
    hit = ToolCall(step=2, tool="add_note", arguments={"title": "x"}, status="fault", fault=fault.describe())
    assert not_reached([fault], [refused, hit]) == []


def test_the_calls_not_reached_counts_are_the_calls_the_boundary_counts_toward_a_fault(notes_domain: Any) -> None:
    """``REFUSED_BEFORE_COUNTED`` restates the boundary's order of checks: held to the boundary itself. Calls refused
    for each reason the boundary can give (invalid arguments, forbidden, not allowed, unknown) do not move a fault
    planned on the first call; the first call that gets through meets it."""
    from passhat.tools.boundary import REFUSED_BEFORE_COUNTED, not_reached

    fault = Fault(tool="get_note", kind="error", on_call=1)
    for refuse, arguments, forbidden, allowed in [
            ("get_note", {"note_id": 7}, (), None), ("get_note", {"note_id": "N-1"}, ("get_note",), None),
            ("get_note", {"note_id": "N-1"}, (), {"list_notes"}), ("no_such_tool", {}, (), None)]:
        world = World.restore(notes_domain.image("default"), 1)
        b = ToolBoundary(notes_domain.tool_list(), ToolContext(world, identity="alice"), faults=[fault],
                         forbidden=forbidden, allowed=allowed)
        first = call(b, refuse, arguments)
        assert first.status in REFUSED_BEFORE_COUNTED and first.fault is None, first
        assert not_reached([fault], b.calls) == [(fault, 0)]
        if not forbidden and allowed is None:
            assert call(b, "get_note", {"note_id": "N-1"}).fault == fault.describe()
            assert not_reached([fault], b.calls) == []
