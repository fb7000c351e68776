"""Record and replay of external tools (tests/data/weather: a random weather service and an SMS gateway)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main
from passhat.domain import load_domain
from passhat.runner.health import EXIT_INCOMPLETE
from passhat.tools.cassette import argument_diff

WEATHER = Path(__file__).parents[1] / "data" / "weather"
AGENT = f"{WEATHER / 'agents.py'}:planner"


def service_calls() -> dict[str, int]:
    """How often the 'real' services ran (module state of the loaded weather domain)."""
    calls: dict[str, int] = load_domain(str(WEATHER / "domain.py")).tools["get_forecast"].func.__globals__["SERVICE_CALLS"]
    return dict(calls)


def run(suite: Path, out: Path, *extra: str, code: int = 0) -> list[dict[str, Any]]:
    r = CliRunner().invoke(main, ["run", str(suite), "--agent", AGENT, "-k", "2", "--out", str(out), "-q",
                                  "--no-report", "--no-sanity", *extra])
    assert r.exit_code == code, r.output
    return [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]


def trajectory(record: dict[str, Any]) -> Any:
    """What the agent did and saw, without timings."""
    calls = [{k: c[k] for k in ("tool", "arguments", "status", "result", "error")} for c in record["calls"]]
    return record["trial"], calls, [m["text"] for m in record["messages"]], record["diff"], record["outcome"]


def test_recorded_once_replayed_twice_identically(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    recorded = run(WEATHER / "cases", tmp_path / "rec", "--record", str(cassettes))
    assert sorted(p.relative_to(cassettes).as_posix() for p in cassettes.rglob("*.json")) == \
        ["picnic/trial-0.json", "picnic/trial-1.json"]
    stored = json.loads((cassettes / "picnic" / "trial-0.json").read_text())
    assert [(i["tool"], i["arguments"]) for i in stored["interactions"]] == [
        ("get_forecast", {"city": "Paris", "day": "2026-06-01"}),
        ("send_sms", {"to": "ann", "text": stored["interactions"][1]["arguments"]["text"]})]
    assert stored["interactions"][1]["changes"]["outbox"][0]["kind"] == "inserted"
    assert not any(r["replayed"] for r in recorded)

    before = service_calls()
    first = run(WEATHER / "cases", tmp_path / "rep1", "--replay", str(cassettes))
    second = run(WEATHER / "cases", tmp_path / "rep2", "--replay", str(cassettes))
    assert service_calls() == before, "a replay called the real service"
    by_trial = sorted(map(trajectory, recorded))
    assert sorted(map(trajectory, first)) == sorted(map(trajectory, second)) == by_trial
    assert all(r["replayed"] and r["outcome"] == "pass" for r in first + second)
    # the SMS the gateway 'sent' is in the replayed final state, so state assertions still hold
    assert all(r["diff"]["outbox"][0]["after"]["recipient"] == "ann" for r in first)

    manifest = json.loads((tmp_path / "rep1" / "manifest.json").read_text())
    assert manifest["cassette"] == {"mode": "replay", "folder": str(cassettes)}
    summary = json.loads((tmp_path / "rep1" / "summary.json").read_text())
    assert summary["suite"]["replayed_trials"] == 2 and summary["cases"][0]["replayed"] == 2
    r = CliRunner().invoke(main, ["show", str(tmp_path / "rep1")])
    assert any(line.startswith("2 trial(s) ran on replayed external tools") for line in r.output.splitlines())


def test_a_changed_request_is_refused_with_a_readable_diff(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    run(WEATHER / "cases", tmp_path / "rec", "--record", str(cassettes))
    changed = tmp_path / "changed"
    shutil.copytree(WEATHER / "cases", changed)
    case = changed / "picnic.yaml"
    case.write_text(case.read_text().replace("in Paris", "in Lyon").replace("../domain.py", str(WEATHER / "domain.py")))
    before = service_calls()
    records = run(changed, tmp_path / "stale", "--replay", str(cassettes), code=EXIT_INCOMPLETE)  # nothing was measured
    assert service_calls() == before
    for r in records:
        assert r["outcome"] == "error" and r["failure"]["category"] == "infrastructure_error"
        assert 'city: recorded "Paris", now "Lyon"' in r["error"] and "not counted against the agent" in r["error"]
        first = r["calls"][0]
        assert first["tool"] == "get_forecast" and first["status"] == "exception"
        assert 'city: recorded "Paris", now "Lyon"' in first["error"]  # what the agent was told
    summary = json.loads((tmp_path / "stale" / "summary.json").read_text())
    assert summary["suite"]["errors"] == 2 and summary["suite"]["trials"] == 0


def test_missing_cassette_and_bad_options(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    records = run(WEATHER / "cases", tmp_path / "nothing", "--replay", str(empty), code=EXIT_INCOMPLETE)
    assert all(r["outcome"] == "error" and "no cassette recorded for case 'picnic'" in r["error"] for r in records)
    args = ["run", str(WEATHER / "cases"), "--agent", AGENT, "-q", "--out", str(tmp_path / "x")]
    r = CliRunner().invoke(main, [*args, "--record", str(tmp_path / "a"), "--replay", str(tmp_path / "b")])
    assert r.exit_code == 2
    assert r.output.splitlines() == ["error: --record and --replay exclude each other: record once, then replay"]
    r = CliRunner().invoke(main, [*args, "--replay", str(tmp_path / "absent")])
    absent = tmp_path / "absent"
    assert r.exit_code == 2
    assert r.output.splitlines() == [f"error: --replay {absent}: no such cassette folder (record one with --record {absent})"]
    r = CliRunner().invoke(main, ["run", "refunds", "--agent", "careful", "-q", "--out", str(tmp_path / "y"),
                                  "--record", str(tmp_path / "c")])
    [line] = r.output.splitlines()
    assert r.exit_code == 2 and line.startswith("error: --record: no domain of suite 'refunds' has an external tool")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cassette folder recorded once for the module."""
    cassettes = tmp_path_factory.mktemp("recorded") / "cassettes"
    run(WEATHER / "cases", cassettes.parent / "rec", "--record", str(cassettes))
    return cassettes


def _unfit_changes(path: Path) -> None:
    doc = json.loads(path.read_text())
    doc["interactions"][1]["changes"] = {"outbox": [{"kind": "inserted"}]}
    path.write_text(json.dumps(doc))


BROKEN = {
    "truncated": (lambda p: p.write_text('{"interactions": ['), "CASSETTE: not a cassette: not JSON (Expecting value"),
    "nested": (lambda p: p.write_text('{"interactions": ' + "[" * 100_000 + "]" * 100_000 + "}"),
               "CASSETTE: nested too deeply to parse"),
    "no interactions": (lambda p: p.write_text("{}"), "CASSETTE: interactions: expected a list of recorded calls"),
    "not a call": (lambda p: p.write_text('{"interactions": [5]}'),
                   "CASSETTE: interactions[0]: expected an object with 'tool' (a name) and 'arguments'"),
    "bad outcome": (lambda p: p.write_text('{"interactions": [{"tool": "get_forecast", "arguments": {}}]}'),
                    "CASSETTE: interactions[0].outcome: expected one of ok, denied, tool_error, exception, got None"),
    "a FIFO": (lambda p: (p.unlink(), os.mkfifo(p)), "CASSETTE: is a named pipe (FIFO); expected a regular file (cassette)"),
    "changes": (_unfit_changes, "send_sms call #1 (CASSETTE): the recorded side effects are malformed (KeyError"),
}
"""Damage done to trial 0's cassette, and what its error must say (CASSETTE: the file's path)."""


@pytest.mark.parametrize("broken", list(BROKEN))
def test_a_broken_cassette_is_an_infrastructure_error_naming_the_file(recorded: Path, tmp_path: Path,
                                                                      broken: str) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(recorded, cassettes)
    path = cassettes / "picnic" / "trial-0.json"
    damage, words = BROKEN[broken]
    damage(path)
    records = {r["trial"]: r for r in run(WEATHER / "cases", tmp_path / "run", "--replay", str(cassettes),
                                           code=EXIT_INCOMPLETE)}
    assert records[1]["outcome"] == "pass"  # trial 1's cassette is whole
    error = records[0]["error"]  # never the agent's fail, never a traceback, never a hang on the FIFO
    assert records[0]["outcome"] == "error" and "not counted against the agent" in error and "Traceback" not in error
    assert words.replace("CASSETTE", str(path)) in error


def test_argument_diff_names_each_field() -> None:
    assert argument_diff({"city": "Paris", "day": "2026-06-01", "n": 2},
                         {"city": "Lyon", "day": "2026-06-01", "n": 2.0, "units": "C"}) == [
        'city: recorded "Paris", now "Lyon"', 'units: not in the recording, now "C"']
    assert argument_diff({"q": {"a": [1, 2]}}, {"q": {}}) == ["q.a: recorded [1, 2], absent now"]
