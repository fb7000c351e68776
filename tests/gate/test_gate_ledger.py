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


def test_a_look_cut_off_mid_write_is_dropped_and_the_ledger_stays_readable(fake_run: Any, gate_file: Any) -> None:
    """A gate killed while writing its look leaves half a line; the next look must not be glued to it, or every
    later gate of the run would refuse the file as not a ledger."""
    run = fake_run("run", {"a": "pppp", "b": "pppf"})
    gate = gate_file("rules:\n  - pass_hat_k: {k: 1, min: 0.5}\n")
    evaluate_gate(run, gate)
    ledger = run / "gate-looks.jsonl"
    whole = ledger.read_text()
    with ledger.open("a") as fh:
        fh.write(whole[:20])  # the start of a second look, then the process died
    evaluate_gate(run, gate)
    evaluate_gate(run, gate)  # and the ledger can still be read after it
    lines = ledger.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["trials"] == 8 for line in lines)
