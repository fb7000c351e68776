"""Constructed run folders (exact outcomes, latencies and costs) and gate files for gate tests."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from passhat.graders import Grade
from passhat.models import Manifest
from passhat.runner import RunStore
from passhat.runner.records import Timing, TrialRecord

NOTES = Path(__file__).parents[1] / "data" / "notes"
AGENTS = NOTES / "agents_compare.py"
OUTCOMES = {"p": "pass", "f": "fail", "e": "error"}


def record(case_id: str, trial: int, letter: str, latency: float, cost: float) -> TrialRecord:
    outcome = OUTCOMES[letter]
    grade = Grade(grader="state", name="row_count(notes)", passed=outcome == "pass",
                  reason="expected 1, actual 1" if outcome == "pass" else "expected 1, actual 2")
    return TrialRecord(case_id=case_id, trial=trial, seed=trial, outcome=outcome,  # type: ignore[arg-type]
                       end_reason="completed" if outcome != "error" else "harness_error",
                       grades=[] if outcome == "error" else [grade],
                       timing=Timing(started_at="2026-01-01T00:00:00+00:00", agent_s=latency, total_s=latency),
                       usage={"cost": cost}, error="RuntimeError: sandbox died" if outcome == "error" else None)


@pytest.fixture
def fake_run(tmp_path: Path) -> Any:
    """Write a run folder from {case id: "ppfp"} (p pass, f fail, e infrastructure error); returns it.

    ``tags``/``groups`` give case metadata, ``latency``/``cost`` per-trial values (same for every trial
    unless a list per case), ``suite_hash`` lets two runs differ, ``status`` marks an unfinished run.
    """

    def make(name: str, cases: dict[str, str], *, tags: dict[str, dict[str, str]] | None = None,
             groups: dict[str, str] | None = None, latency: float | dict[str, list[float]] = 1.0,
             cost: float = 0.0, suite_hash: str = "suite-v1", status: str = "complete", gate: Any = None) -> Path:
        out = tmp_path / name
        shutil.rmtree(out, ignore_errors=True)
        store = RunStore(out)
        manifest: dict[str, Any] = {
            "suite": {"name": "fake", "hash": suite_hash,
                      "cases": {cid: hashlib.sha256(cid.encode()).hexdigest() for cid in cases},
                      "case_meta": {cid: {"tags": (tags or {}).get(cid, {"scenario": "normal"}),
                                          "group": (groups or {}).get(cid), "split": "dev"} for cid in cases},
                      "domains": {"fake": "d1"}},
            "agent": name, "trials": max(len(v) for v in cases.values()), "seed": 3, "status": status}
        if gate is not None:
            manifest["gate"] = gate
        store.write_manifest(Manifest.from_dict(manifest))
        store.open_for_append()
        for cid, letters in cases.items():
            for i, letter in enumerate(letters):
                lat = latency[cid][i] if isinstance(latency, dict) else latency
                store.append(record(cid, i, letter, lat, cost))
        store.close()
        return out

    return make


@pytest.fixture
def gate_file(tmp_path: Path) -> Any:
    """Write a gate file from YAML text; returns its path."""

    def make(text: str, name: str = "gate.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return make
