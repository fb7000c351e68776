"""Gating a run folder: resolve the gate, load the baseline, evaluate every rule, write ``RUN/gate.json``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from passhat import __version__
from passhat.compare import case_changes, load_run, match_cases
from passhat.gate.context import GateInput
from passhat.gate.evaluate import evaluate_rules
from passhat.gate.outcome import EXIT_CODES, overall
from passhat.gate.registration import resolve_gate
from passhat.models import BaselineInfo, ExcludedCase, GateResult

GATE_RESULT = "gate.json"


def evaluate_gate(
    run_folder: Path, gate_path: Path | None = None, baseline_folder: Path | None = None, *,
    allow_gate_change: bool = False, allow_changed_cases: bool = False,
) -> GateResult:
    """The gate result for a run (the content of gate.json). Bad input raises a ``PasshatError``."""
    run = load_run(run_folder)
    resolved = resolve_gate(run.manifest, gate_path, allow_gate_change=allow_gate_change,
                            manifest_path=str(Path(run_folder) / "manifest.json"))
    baseline = load_run(baseline_folder) if baseline_folder is not None else None
    matching = match_cases(baseline, run, allow_changed_cases=allow_changed_cases) if baseline else None
    inp = GateInput(run, baseline, matching, resolved.path.parent, resolved.gate.alpha)
    results = evaluate_rules(resolved.gate, inp, str(resolved.path))
    outcome = overall(results)
    baseline_block = None
    if baseline is not None and matching is not None:
        changes = case_changes(baseline, run, matching.case_ids, resolved.gate.alpha)
        # New failures are the significant drops, as no_new_failures decides; the rest failed a trial by chance.
        baseline_block = BaselineInfo(
            **dict(baseline.describe()), compared_cases=len(matching.case_ids),
            excluded=[ExcludedCase(id=e.case_id, reason=e.reason) for e in matching.excluded],
            new_failures=[r for r in changes.new_failures if r.significant],
            failed_a_trial=[r for r in changes.new_failures if not r.significant], new_passes=changes.new_passes)
    return GateResult(outcome=outcome, exit_code=EXIT_CODES[outcome], gate=resolved.info, run=run.describe(),
                      baseline=baseline_block, allow_changed_cases=allow_changed_cases,
                      evaluated_at=datetime.now(UTC).isoformat(), passhat_version=__version__, rules=results)


def write_gate_result(run_folder: Path, result: GateResult) -> Path:
    """Write ``gate.json`` into the run folder (atomically: never half a file)."""
    return result.dump(Path(run_folder) / GATE_RESULT)


def read_gate_result(run_folder: Path) -> GateResult | None:
    """The run's ``gate.json`` through its model, or None when there is none."""
    path = Path(run_folder) / GATE_RESULT
    return GateResult.load(path) if path.exists() else None
