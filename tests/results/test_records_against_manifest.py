"""Readers check records against the manifest, and a run whose trials.jsonl vanishes fails (issue 25, item 5).

A duplicate (case, trial), a case the run never had and a trial number outside the run's were all counted
into n; each is now an error naming the file and the line, through every reader (`show`, `gate`,
`regrade`, the library).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main
from passhat.errors import RunError
from passhat.results import build_summary
from passhat.runner import RunStore

NOTES = Path(__file__).parents[1] / "data" / "notes"


@pytest.fixture
def recorded(run_notes: Any) -> Path:
    return run_notes("good", trials=2)


def corrupt(out: Path, how: str) -> int:
    """Append one bad line; returns its line number."""
    path = out / "trials.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    if how == "unknown case":
        record["case_id"] = "no-such-case"
    elif how == "out of range":
        record["trial"] = 7
    path.write_text("\n".join([*lines, json.dumps(record)]) + "\n")
    return len(lines) + 1


@pytest.mark.parametrize(("how", "said"), [
    ("duplicate", "a second record of case"),
    ("unknown case", "case 'no-such-case' is not one of the run's cases"),
    ("out of range", "trial 7 of case"),
])
@pytest.mark.parametrize("command", ["show", "regrade"])
def test_a_record_the_manifest_cannot_hold_is_an_error_naming_file_and_line(recorded: Path, tmp_path: Path,
                                                                           how: str, said: str, command: str) -> None:
    line = corrupt(recorded, how)
    args = [command, str(recorded)] + (["--out", str(tmp_path / "regraded"), "-q"] if command == "regrade" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"trials.jsonl:{line}: {said}" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_the_library_reader_refuses_it_too(recorded: Path) -> None:
    line = corrupt(recorded, "duplicate")
    store = RunStore(recorded)
    with pytest.raises(RunError, match=f"trials.jsonl:{line}: a second record"):
        build_summary(store.iter_records(), store.manifest())


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_trials_file_that_vanishes_mid_run_fails_the_run(tmp_path: Path, how: str) -> None:
    """Used to exit 0 with a summary of 0 trials: the records went into an unlinked file."""
    from passhat.cases import load_suite
    from passhat.runner import RunConfig, execute

    out = tmp_path / "run"
    seen: list[int] = []

    async def agent(ep: Any) -> str:
        if ep.trial == 1 and not seen:  # the first trial's record is on disk by now
            seen.append(1)
            path = out / "trials.jsonl"
            if how == "removed":
                path.unlink()
            else:
                os.link(path, out / "old.jsonl")  # replaced in one step: the name never vanishes (the check
                (out / "new.jsonl").write_text("")  # runs in the group-commit thread, at any moment)
                os.replace(out / "new.jsonl", path)
        await ep.call("add_note", {"title": "call mom", "priority": 2})
        return "added"

    async def go() -> None:
        cfg = RunConfig(suite=load_suite(str(NOTES / "cases")), agent=agent, agent_spec="vanishing",
                        trials=3, concurrency=1, out=out)
        await execute(cfg)

    with pytest.raises(RunError, match=f"trials.jsonl was {how}"):
        asyncio.run(go())
    assert os.path.exists(out / "manifest.json")
    assert json.loads((out / "manifest.json").read_text())["status"] != "complete"


@pytest.mark.parametrize(("field", "value", "said"), [
    ("timing", {"started_at": "x", "agent_s": "slow"}, "not a trial record: timing.agent_s: Input should be a valid number"),
    ("outcome", None, "not a trial record: outcome: Field required"),
])
@pytest.mark.parametrize("command", ["show", "compare"])
def test_a_record_with_a_bad_field_names_the_field(recorded: Path, field: str, value: Any, said: str,
                                                    command: str) -> None:
    # the error said "1 validation error for TallyRecord": a model the user never wrote, and no field
    path = recorded / "trials.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    if value is None:
        del record[field]
    else:
        record[field] = value
    lines[1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    args = [command, str(recorded)] + ([str(recorded)] if command == "compare" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"trials.jsonl:2: {said}" in result.output and len(result.output.strip().splitlines()) == 1
