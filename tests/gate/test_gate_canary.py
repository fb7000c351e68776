"""The canary rule through `passhat gate RUN --gate FILE` on a real run of the built-in refunds suite."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.canary import compare_canary, load_records
from passhat.cli import main


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("canary") / "run"
    r = CliRunner().invoke(main, ["run", "refunds", "--agent", "careful", "--trials", "2", "--seed", "0",
                                  "--out", str(out), "-q", "--no-sanity"])
    assert r.exit_code == 0, r.output
    return out


def outcomes(path: Path, version: str, successes: int, n: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"version": version, "outcome": "success" if i < successes else "error",
                                        "latency_s": 1.0}) + "\n" for i in range(n)))
    return path


def gate(run: Path, tmp_path: Path, rule: str) -> tuple[int, str, dict[str, Any]]:
    (tmp_path / "gate.yaml").write_text(f"rules:\n  - canary: {rule}\n")
    r = CliRunner().invoke(main, ["gate", str(run), "--gate", str(tmp_path / "gate.yaml")])
    result = json.loads((run / "gate.json").read_text()) if r.exit_code != 2 else {}
    return r.exit_code, r.output, result


@pytest.mark.parametrize(("candidate_successes", "decision", "code"), [
    (2000, "PASS", 0),  # 90 % → 100 %: a drop of 2 points is ruled out
    (1500, "FAIL", 1),  # 90 % → 75 %
    (1790, "INCONCLUSIVE", 3),  # 90 % → 89.5 %: cannot rule out a 2-point drop at this size
])
def test_canary_rule_decides_as_passhat_canary(run: Path, tmp_path: Path, candidate_successes: int,
                                                decision: str, code: int) -> None:
    b = outcomes(tmp_path / "prod" / "v1.jsonl", "v1", 1800, 2000)
    c = outcomes(tmp_path / "prod" / "v2.jsonl", "v2", candidate_successes, 2000)
    exit_code, output, result = gate(run, tmp_path, "{baseline: prod/v1.jsonl, candidate: prod/v2.jsonl, max_drop: 0.02}")
    assert exit_code == code, output
    (rule,) = result["rules"]
    assert rule["kind"] == "canary" and rule["outcome"] == decision
    expected = compare_canary(load_records(b), load_records(c), max_drop=0.02)  # what `passhat canary` decides
    assert expected.decision == decision
    success = expected.overall.rates["success"]
    assert success is not None and (rule["low"], rule["high"]) == pytest.approx((success.low, success.high))
    cli = CliRunner().invoke(main, ["canary", str(b), str(c), "--max-drop", "0.02", "--resamples", "100"])
    assert cli.exit_code == code


def test_gate_json_records_the_sha256_of_both_files(run: Path, tmp_path: Path) -> None:
    b = outcomes(tmp_path / "v1.jsonl", "v1", 1800, 2000)
    c = outcomes(tmp_path / "v2.jsonl", "v2", 1500, 2000)
    _, _, result = gate(run, tmp_path, "{baseline: v1.jsonl, candidate: v2.jsonl, max_drop: 0.02}")
    details = result["rules"][0]["details"]
    assert details["baseline"]["sha256"] == hashlib.sha256(b.read_bytes()).hexdigest()
    assert details["candidate"]["sha256"] == hashlib.sha256(c.read_bytes()).hexdigest()
    assert details["baseline"]["records"] == 2000 and details["candidate"]["versions"] == ["v2"]
    outcomes(c, "v2", 1990, 2000)  # new production data, same gate file: the recorded hash changes with it
    _, _, again = gate(run, tmp_path, "{baseline: v1.jsonl, candidate: v2.jsonl, max_drop: 0.02}")
    assert again["rules"][0]["details"]["candidate"]["sha256"] == hashlib.sha256(c.read_bytes()).hexdigest()
    assert again["rules"][0]["details"]["candidate"]["sha256"] != details["candidate"]["sha256"]


def test_confidence_sets_the_interval(run: Path, tmp_path: Path) -> None:
    outcomes(tmp_path / "v1.jsonl", "v1", 1800, 2000)
    outcomes(tmp_path / "v2.jsonl", "v2", 1790, 2000)
    _, _, wide = gate(run, tmp_path, "{baseline: v1.jsonl, candidate: v2.jsonl, max_drop: 0.02, confidence: 0.99}")
    _, _, narrow = gate(run, tmp_path, "{baseline: v1.jsonl, candidate: v2.jsonl, max_drop: 0.02, confidence: 0.8}")
    assert wide["rules"][0]["low"] < narrow["rules"][0]["low"]
    assert wide["rules"][0]["details"]["confidence"] == 0.99


def test_a_malformed_line_is_bad_input_naming_file_line_and_field(run: Path, tmp_path: Path) -> None:
    outcomes(tmp_path / "v1.jsonl", "v1", 1800, 2000)
    bad = tmp_path / "v2.jsonl"
    bad.write_text('{"version": "v2", "outcome": "success", "latency_s": 1}\n'
                   '{"version": "v2", "outcome": "ok", "latency_s": 1}\n')
    code, output, _ = gate(run, tmp_path, "{baseline: v1.jsonl, candidate: v2.jsonl, max_drop: 0.02}")
    assert code == 2, output
    flat = " ".join(output.split())
    assert "rules.0.canary.candidate" in flat and "v2.jsonl:2: outcome" in flat, output


@pytest.mark.parametrize(("rule", "field"), [
    ("{baseline: missing.jsonl, candidate: v2.jsonl, max_drop: 0.02}", "rules.0.canary.baseline"),
    ("{baseline: v1.jsonl, candidate: v2.jsonl, max_drop: 0.02, alpha: 0.1}", "rules.0.canary"),
    ("{baseline: v1.jsonl, candidate: v2.jsonl}", "rules.0.canary.max_drop"),
])
def test_unusable_canary_input_is_bad_input(run: Path, tmp_path: Path, rule: str, field: str) -> None:
    outcomes(tmp_path / "v1.jsonl", "v1", 1800, 2000)
    outcomes(tmp_path / "v2.jsonl", "v2", 1800, 2000)
    code, output, _ = gate(run, tmp_path, rule)
    assert code == 2 and field in " ".join(output.split()), output
