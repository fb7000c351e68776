"""Re-grading a stored run after tightening assertions, without ever calling (or loading) the agent."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from passhat.cases import load_suite
from passhat.cli import main
from passhat.episode import Episode
from passhat.runner import RunConfig, execute

NOTES = Path(__file__).parents[1] / "data" / "notes"
ARMED = {"on": False}


async def writer(ep: Episode) -> str:
    """Adds the note named in the instruction; priority 2 in trial 0, 3 in trial 1. Fails the test once armed."""
    if ARMED["on"]:
        pytest.fail("the agent was called during a re-grade")
    title = re.search(r"'([^']+)'", ep.instruction).group(1)  # type: ignore[union-attr]
    await ep.call("add_note", {"title": title, "priority": 2 if ep.trial == 0 else 3})
    return "added"


def note_case(case_id: str, title: str, *extra: dict[str, Any]) -> dict[str, Any]:
    return {"id": case_id, "domain": str(NOTES / "domain.py"), "instruction": f"Add a note titled '{title}'.",
            "user": {"identity": "alice"},
            "assertions": [{"row_count": {"table": "notes", "where": {"owner": "alice", "title": title}, "equals": 1}},
                           *extra]}


def write(folder: Path, *cases: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for c in cases:
        (folder / f"{c['id']}.yaml").write_text(yaml.safe_dump(c, sort_keys=False))


def records(folder: Path) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["case_id"], r["trial"]): r for r in map(json.loads, (folder / "trials.jsonl").read_text().splitlines())}


@pytest.fixture
def stored_run(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A completed run of mom/dad/bob (all pass), whose manifest names an agent that must never be loaded."""
    cases = tmp_path / "suite"
    write(cases, note_case("mom", "call mom"), note_case("dad", "call dad"), note_case("bob", "call bob"))
    marker = tmp_path / "agent-was-loaded"
    tripwire = tmp_path / "tripwire.py"
    tripwire.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('loaded')\n"
                        "async def explode(ep):\n    raise AssertionError('called')\n")
    out = tmp_path / "source"
    ARMED["on"] = False
    cfg = RunConfig(suite=load_suite(str(cases)), agent=writer, agent_spec=f"{tripwire}:explode", trials=2, out=out)
    asyncio.run(execute(cfg))
    ARMED["on"] = True
    assert {r["outcome"] for r in records(out).values()} == {"pass"}
    return cases, out, marker


def test_tightened_assertions_change_exactly_the_affected_trials(stored_run: tuple[Path, Path, Path], tmp_path: Path) -> None:
    cases, source, marker = stored_run
    before_bytes = (source / "trials.jsonl").read_bytes()
    old_hashes = json.loads((source / "manifest.json").read_text())["suite"]["cases"]
    write(cases,
          note_case("mom", "call mom", {"field_equals": {"table": "notes", "where": {"title": "call mom"}, "field": "priority",
                                                         "equals": 2}}),
          note_case("dad", "call dad", {"sql": {"query": "SELECT priority FROM notes WHERE title = 'call dad'", "expect": 2}}))
    out = tmp_path / "regraded"
    r = CliRunner().invoke(main, ["regrade", str(source), "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert not marker.exists(), "the agent named in the manifest was imported"
    assert (source / "trials.jsonl").read_bytes() == before_bytes

    old, new = records(source), records(out)
    assert set(new) == set(old)
    flipped = {k for k in old if old[k]["outcome"] != new[k]["outcome"]}
    assert flipped == {("mom", 1), ("dad", 1)}
    assert all(new[k]["outcome"] == "fail" for k in flipped)
    reasons = [g["reason"] for g in new[("dad", 1)]["grades"] if not g["passed"]]
    assert reasons == ["query result: expected 2, actual 3"]  # SQL on the rebuilt final state
    assert new[("mom", 1)]["failure"]["category"] == "wrong_final_state"
    for key in [("bob", 0), ("bob", 1)]:  # unchanged case: same grades, same trajectory
        assert [(g["name"], g["passed"], g["reason"]) for g in new[key]["grades"]] == \
            [(g["name"], g["passed"], g["reason"]) for g in old[key]["grades"]]
        assert new[key]["calls"] == old[key]["calls"]

    manifest = json.loads((out / "manifest.json").read_text())
    regrade = manifest["regrade"]
    assert regrade["source"] == str(source) and sorted(regrade["changed_cases"]) == ["dad", "mom"]
    assert regrade["source_case_hashes"] == old_hashes and regrade["missing_cases"] == []
    assert manifest["suite"]["cases"]["bob"] == old_hashes["bob"] and manifest["suite"]["cases"]["mom"] != old_hashes["mom"]
    assert sorted((c["case_id"], c["trial"]) for c in regrade["outcome_changes"]) == [("dad", 1), ("mom", 1)]
    summary = json.loads((out / "summary.json").read_text())
    assert {c["id"]: c["successes"] for c in summary["cases"]} == {"bob": 2, "dad": 1, "mom": 1}


def test_cases_missing_from_the_suite_are_reported_and_skipped(stored_run: tuple[Path, Path, Path], tmp_path: Path) -> None:
    cases, source, marker = stored_run
    (cases / "dad.yaml").unlink()
    out = tmp_path / "regraded"
    r = CliRunner().invoke(main, ["regrade", str(source), "--suite", str(cases), "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert "not in the suite any more" in r.output and "dad" in r.output
    regrade = json.loads((out / "manifest.json").read_text())["regrade"]
    assert regrade["missing_cases"] == ["dad"] and regrade["skipped_trials"] == 2 and regrade["trials"] == 4
    assert {k[0] for k in records(out)} == {"mom", "bob"}
    assert not marker.exists()
    # the new folder is a run folder like any other, and will not be overwritten
    r = CliRunner().invoke(main, ["regrade", str(source), "--out", str(out)])
    assert r.exit_code == 2 and "already holds a run" in r.output
