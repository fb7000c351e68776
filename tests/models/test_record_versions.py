"""Trial records carry their schema version; records of an older shape are read, others refused saying what to do.

Records without ``schema_version`` are on users' disks: ``tests/data/runs/unversioned-9d18f5b`` is a run folder
written by passhat at commit 9d18f5b (see tests/data/runs/README.md), read, shown and re-graded here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import passhat
from passhat.cli import main
from passhat.errors import RunError
from passhat.models import SchemaVersionError
from passhat.regrade import regrade_run
from passhat.report.html import write_report
from passhat.results.tally import tally_records
from passhat.runner import RunStore
from passhat.runner.records import RECORD_SCHEMA

OLD = Path(__file__).parents[1] / "data" / "runs" / "unversioned-9d18f5b"


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    return Path(shutil.copytree(OLD, tmp_path / "old"))


def test_records_are_written_with_their_version_first(run_notes: Any) -> None:
    # the reader's check is a prefix comparison for records this passhat wrote: they must start with it
    lines = (run_notes("good", trials=1) / "trials.jsonl").read_bytes().splitlines()
    assert lines and all(line.startswith(b'{"schema_version":"passhat.record/1",') for line in lines)


def test_records_written_before_versions_are_read_as_version_1(old_run: Path) -> None:
    assert all("schema_version" not in json.loads(line) for line in (old_run / "trials.jsonl").read_text().splitlines())
    run = passhat.Run.open(old_run)
    records = list(run.records())
    assert [(r.case_id, r.outcome) for r in records] == [("already-refunded-4860", "fail"), ("refund-4812-terse", "pass")]
    assert {r.schema_version for r in records} == {RECORD_SCHEMA}
    assert records[0].isolation is None and records[0].upstreams is None and not records[0].replayed  # later fields
    assert records[0].failed_grades() and records[0].failure is not None
    # its summary had no version: derived data, recomputed from the records
    assert run.summary.case("refund-4812-terse").passed_every_trial and run.summary.case("already-refunded-4860").n == 1
    shown = CliRunner().invoke(main, ["show", str(old_run)])
    assert shown.exit_code == 0 and "refund-4812-terse" in shown.output and "│ 1/1 │" in shown.output, shown.output


def test_records_written_before_versions_are_regraded(old_run: Path, tmp_path: Path) -> None:
    report = regrade_run(old_run, tmp_path / "regraded")
    assert report.trials == 2 and report.skipped_trials == 0
    regraded = [json.loads(line) for line in (tmp_path / "regraded" / "trials.jsonl").read_text().splitlines()]
    assert [r["schema_version"] for r in regraded] == [RECORD_SCHEMA] * 2  # written back in today's shape
    assert {r["case_id"]: r["outcome"] for r in regraded}["refund-4812-terse"] == "pass"


def _rewrite_second(folder: Path, version: str) -> None:
    path = folder / "trials.jsonl"
    first, second = path.read_text().splitlines()
    path.write_text(first + "\n" + json.dumps({"schema_version": version, **json.loads(second)}) + "\n")


def test_a_record_of_a_newer_version_is_refused_saying_to_upgrade(old_run: Path) -> None:
    _rewrite_second(old_run, "passhat.record/2")
    expected = (f"{old_run / 'trials.jsonl'}:2: has schema_version passhat.record/2, newer than the passhat.record/1 "
                "this passhat reads; upgrade passhat to read it")
    with pytest.raises(SchemaVersionError) as raised:
        list(RunStore(old_run).iter_records())
    assert str(raised.value) == expected
    with pytest.raises(SchemaVersionError, match="passhat.record/2, newer"):
        list(tally_records(old_run / "trials.jsonl"))  # what show --recompute and summaries read
    with pytest.raises(SchemaVersionError, match="passhat.record/2, newer"):
        write_report(old_run)  # the report's chunks copy the stored lines
    shown = CliRunner().invoke(main, ["show", str(old_run), "--recompute"])
    assert shown.exit_code == 2 and expected in " ".join(shown.output.split()), shown.output


def test_a_line_of_another_kind_is_refused_naming_it(old_run: Path) -> None:
    _rewrite_second(old_run, "passhat.summary/3")
    with pytest.raises(RunError, match=r"trials.jsonl:2: is a 'passhat.summary/3' file, not passhat.record .*"
                                       r"fix or remove that line"):
        list(RunStore(old_run).iter_records())


def test_the_version_word_inside_a_tool_result_is_not_a_version(old_run: Path) -> None:
    path = old_run / "trials.jsonl"
    first, second = path.read_text().splitlines()
    record = json.loads(second)
    record["reply"] = 'the config says "schema_version": "passhat.record/9"'
    path.write_text(first + "\n" + json.dumps(record) + "\n")
    assert [r.reply for r in RunStore(old_run).iter_records()][1].endswith('"passhat.record/9"')
