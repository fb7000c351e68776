"""``gate.json`` in a run folder: its name and how it is read back.

Apart from :mod:`passhat.gate.report`, which evaluates a gate and brings compare and the statistics along, so
that what only reads a gate's result (the HTML report of every run, gated or not) does not import them.
"""

from __future__ import annotations

from pathlib import Path

from passhat.models import GateResult

GATE_RESULT = "gate.json"


def read_gate_result(run_folder: Path) -> GateResult | None:
    """The run's ``gate.json`` through its model, or None when there is none."""
    path = Path(run_folder) / GATE_RESULT
    return GateResult.load(path) if path.exists() else None
