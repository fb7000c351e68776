"""A run's tallies kept as its records are written (results.tally.ReportedTally): what reading trials.jsonl back
gives, strings redacted as stored, or nothing when that cannot be vouched for; a run's summary uses them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import passhat
import passhat.results.summary as summary_module
from passhat.graders.base import Grade
from passhat.redaction import Redactor
from passhat.results import tag_keys
from passhat.results.summary import summary_of_records_file
from passhat.results.tally import ReportedTally, tally, tally_records
from passhat.runner.records import Timing, TrialRecord
from passhat.runner.store import RunStore
from passhat.tools.boundary import ToolCall

NOTES = Path(__file__).parents[1] / "data" / "notes"
MAIL = "wrote to bob@example.com, call 415-555-0142"


def record(case: str, trial: int, *, fail: bool, fault: bool = False) -> TrialRecord:
    """A record whose tally strings hold personal data: the failing grade's reason, a fault that did not apply."""
    calls = [ToolCall(step=0, tool="add_note", arguments={}, status="ok"),
             ToolCall(step=1, tool="add_note", arguments={}, status="ok", fault="timeout",
                      fault_not_applied=f"nothing to withhold from {MAIL}" if fault else None)]
    grades = [Grade(grader="reply", name="reply_contains(added)", passed=not fail, reason=f"last reply: {MAIL}"),
              Grade(grader="rules", name="informational", passed=False, reason="not required", required=False)]
    return TrialRecord(case_id=case, trial=trial, seed=trial, outcome="fail" if fail else "pass",
                       end_reason="completed", grades=grades, calls=calls, reply=MAIL,
                       timing=Timing(started_at="2026-12-07T00:00:00", agent_s=0.1 + trial / 3))


@pytest.mark.parametrize("redactor", [Redactor(), Redactor(enabled=False)], ids=["default patterns", "off"])
def test_the_tallies_are_those_of_the_stored_lines(tmp_path: Path, redactor: Redactor) -> None:
    store = RunStore(tmp_path, redactor)
    reported = ReportedTally(redactor)
    lines = b""
    for trial in range(6):
        for case in ("b", "a"):
            rec = record(case, trial, fail=trial % 2 == 1, fault=trial == 3)
            lines += store.encode(rec)
            reported.add(rec)
    (tmp_path / "trials.jsonl").write_bytes(lines)
    from_file = tally(tally_records(tmp_path / "trials.jsonl"), ["a", "b"])
    kept = reported.tallies(tmp_path / "trials.jsonl", ["a", "b"])
    assert kept == from_file and list(kept) == ["a", "b"]
    assert kept["a"].failure_reasons[0] == f"reply_contains(added): last reply: {redactor.value(MAIL)}"
    assert list(kept["a"].faults_not_applied) == [f"timeout: nothing to withhold from {redactor.value(MAIL)}"]
    assert kept["a"].faults_acted == {"timeout": 6}  # what faults_not_reached is counted against


def test_nothing_is_vouched_for_that_the_file_may_hold_otherwise(tmp_path: Path) -> None:
    """Named fields or the user's patterns redact a string by where it is or in ways the text path leaves to the
    value path: the file is read back. So is a file holding records this tally did not see (a resumed run)."""
    path = tmp_path / "trials.jsonl"
    named = ReportedTally(Redactor.build(extra_fields=["reason"]))
    own = ReportedTally(Redactor.build(extra_patterns={"order": r"order \d+"}))
    plain = ReportedTally(Redactor())
    store = RunStore(tmp_path, Redactor())
    path.write_bytes(store.encode(record("a", 0, fail=True)) + store.encode(record("a", 1, fail=False)))
    for kept in (named, own, plain):
        kept.add(record("a", 1, fail=False))
    assert named.tallies(path, ["a"]) is None and own.tallies(path, ["a"]) is None
    assert plain.tallies(path, ["a"]) is None  # two lines, one record seen


def test_a_run_s_summary_does_not_read_its_records_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary a run writes is the one its trials.jsonl gives (a redacted failure reason included), made
    from the tallies kept as the records were written: the file is not read again after the last trial."""
    async def agent(episode: Any) -> str:
        await episode.call("add_note", {"title": "call mom", "priority": 2})
        return "added" if episode.trial % 2 == 0 else MAIL

    read_back: list[Path] = []
    real = summary_module.tally_records
    monkeypatch.setattr(summary_module, "tally_records", lambda path: read_back.append(path) or real(path))
    out = tmp_path / "run"
    run = passhat.evaluate(str(NOTES / "cases"), agent, trials=4, concurrency=4, out=out, sanity=False)
    assert read_back == []
    store = RunStore(out)
    manifest = store.manifest()
    again = summary_of_records_file(store, manifest, by=tag_keys(manifest))
    assert read_back == [store.trials_path]
    again.dump(tmp_path / "again.json")
    assert run.summary == again and (out / "summary.json").read_bytes() == (tmp_path / "again.json").read_bytes()
    assert "[REDACTED:email]" in (run.summary.cases[0].top_failure or "")
    resumed = passhat.evaluate(str(NOTES / "cases"), agent, out=out, resume=True)
    assert len(read_back) == 2 and resumed.summary == again  # a resumed run's earlier records: read back
