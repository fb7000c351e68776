"""Gating is a look at the data: recorded in RUN/gate-looks.jsonl, and not repeated on other trials (issue 22)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from passhat.gate import GateError, evaluate_gate
from passhat.runner import RunStore
from tests.gate.conftest import record


def test_every_gate_evaluation_is_recorded_with_the_data_it_saw(fake_run: Any, gate_file: Any) -> None:
    run = fake_run("run", {"a": "pppp", "b": "pppf"})
    gate = gate_file("rules:\n  - pass_hat_k: {k: 1, min: 0.5}\n")
    first = evaluate_gate(run, gate, source="passhat gate").to_dict()
    again = evaluate_gate(run, gate).to_dict()  # the same data: the same look, allowed (e.g. with a baseline added later)
    assert first["outcome"] == again["outcome"]
    looks = [json.loads(line) for line in (run / "gate-looks.jsonl").read_text().splitlines()]
    size = (run / "trials.jsonl").stat().st_size
    assert [(e["source"], e["trials"], e["trials_bytes"], e["sequential_look"]) for e in looks] == [
        ("passhat gate", 8, size, None), ("api", 8, size, None)]


def test_gating_again_after_the_trials_changed_is_refused(fake_run: Any, gate_file: Any) -> None:
    run = fake_run("run", {"a": "pppp", "b": "ppe"})
    gate = gate_file("rules:\n  - pass_hat_k: {k: 1, min: 0.5}\n")
    evaluate_gate(run, gate)
    store = RunStore(run)
    store.open_for_append()
    store.append(record("b", 3, "p", 1.0, 0.0))  # e.g. a missing trial run later with --resume
    store.close()
    with pytest.raises(GateError, match=r"gate-looks.jsonl: this run was gated at .* on 7 recorded trial\(s\).*"
                                        r"second look at the data.*--sequential"):
        evaluate_gate(run, gate)
    assert len((run / "gate-looks.jsonl").read_text().splitlines()) == 1  # a refused look is not recorded
