"""Splits and tag filters select cases; the manifest records the filter; summaries and gates follow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from passhat.cases import load_suite
from passhat.cli import main
from passhat.suites import CaseFilter, SelectionError, parse_tag_filters, select_cases
from tests.suites.helpers import AGENTS, notes_case, write_cases


def run_cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_split_and_tags_select_cases(split_suite: Path) -> None:
    suite = load_suite(str(split_suite))
    holdout, block = select_cases(suite, CaseFilter(("holdout",)))
    assert [c.id for c in holdout.cases] == ["add-holdout", "fault-holdout"]
    assert block is not None and block.cases == ["add-holdout", "fault-holdout"]
    assert (block.full_suite.hash, block.full_suite.cases) == (suite.content_hash(), 4)
    assert holdout.content_hash() != suite.content_hash()
    faults, _ = select_cases(suite, CaseFilter((), parse_tag_filters(["scenario=fault", "risk=high", "risk=medium"])))
    assert [c.id for c in faults.cases] == ["fault-dev"]  # keys AND, repeated key OR
    assert select_cases(suite, CaseFilter()) == (suite, None)
    with pytest.raises(SelectionError, match="no case .* matches split=regression"):
        select_cases(suite, CaseFilter(("regression",)))
    with pytest.raises(SelectionError, match="KEY=VALUE"):
        parse_tag_filters(["scenario"])


def test_run_restricted_to_holdout_and_gated(split_suite: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.yaml"
    gate.write_text(yaml.safe_dump({"name": "holdout acceptance", "rules": [
        {"never_fails": {"select": {"split": "holdout"}}},
        {"never_fails": {"name": "holdout faults", "select": {"split": "holdout", "tags": {"scenario": "fault"}}}},
    ]}))
    out = tmp_path / "run"
    code, output = run_cli("run", str(split_suite), "--agent", f"{AGENTS}:good", "-k", "2", "--split", "holdout",
                           "--out", str(out), "-q", "--no-report", "--gate", str(gate))
    assert code == 0, output
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["suite"]["cases"]) == ["add-holdout", "fault-holdout"]
    assert manifest["selection"]["filter"] == {"split": ["holdout"], "tags": {}}
    assert manifest["selection"]["cases"] == ["add-holdout", "fault-holdout"]
    summary = json.loads((out / "summary.json").read_text())
    assert {c["id"] for c in summary["cases"]} == {"add-holdout", "fault-holdout"}
    result = json.loads((out / "gate.json").read_text())
    assert result["outcome"] == "PASS"
    never, faults = result["rules"]
    assert never["outcome"] == "PASS" and never["selection"] == "split=holdout" and "2 case(s)" in never["reason"]
    assert faults["outcome"] == "PASS" and "1 case(s)" in faults["reason"]
    # the standalone gate command on the same run agrees
    code, output = run_cli("gate", str(out))
    assert code == 0, output


def test_tag_filter_on_the_command_line(split_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "tagged"
    code, output = run_cli("run", str(split_suite), "--agent", f"{AGENTS}:good", "-k", "1", "--tag", "scenario=fault",
                           "--tag", "risk=low", "--out", str(out), "-q", "--no-report", "--no-sanity")
    assert code == 0, output
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["suite"]["cases"]) == ["fault-holdout"]
    assert manifest["selection"]["describe"] == "scenario=fault risk=low"
    code, output = run_cli("run", str(split_suite), "--agent", f"{AGENTS}:good", "--tag", "scenario=nope",
                           "--out", str(tmp_path / "none"), "-q")
    assert code == 2 and "no case" in output


def test_show_restricted_to_a_split(split_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "all"
    code, output = run_cli("run", str(split_suite), "--agent", f"{AGENTS}:good", "-k", "1", "--out", str(out), "-q",
                           "--no-report", "--no-sanity")
    assert code == 0, output
    from passhat.results import build_summary
    from passhat.runner import RunStore

    store = RunStore(out)
    dev = build_summary(store.iter_records(), store.manifest(), splits=["dev"])
    assert dev.suite.split == "dev" and dev.suite.cases == 2 and dev.suite.trials == 2
    assert {c.id for c in dev.cases} == {"add-dev", "fault-dev"}
    code, output = run_cli("show", str(out), "--split", "holdout")
    assert code == 0 and "add-holdout" in output and "add-dev" not in output


def test_family_across_dev_and_holdout_is_refused(tmp_path: Path) -> None:
    folder = write_cases(
        tmp_path / "leaky",
        notes_case("a-dev", "Add a note titled 'call mom' with priority 2.", group="call-mom"),
        notes_case("a-holdout", "Note to self: call mom (priority 2).", group="call-mom", split="holdout"),
    )
    code, output = run_cli("run", str(folder), "--agent", f"{AGENTS}:good", "-k", "1", "--out", str(tmp_path / "r"), "-q")
    assert code == 2
    assert "family spread over dev and holdout" in output and "'call-mom'" in output and "a-holdout" in output
    assert not (tmp_path / "r").exists()
    code, output = run_cli("cases", "lint", str(folder))
    assert code == 1 and "family-leak" in output
