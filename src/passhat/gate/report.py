"""Gating a run folder: resolve the gate, load the baseline, evaluate every rule, write ``RUN/gate.json``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from passhat import __version__
from passhat.compare import CompareError, LoadedRun, case_changes, load_run, match_cases, require_trials
from passhat.errors import RunError
from passhat.gate.context import GateInput
from passhat.gate.evaluate import evaluate_rules, unreachable_rules
from passhat.gate.ledger import record_look, refuse_new_trials, refuse_unfinished
from passhat.gate.looks import SequentialRun, gate_sequential_run, recorded_baseline
from passhat.gate.outcome import EXIT_CODES, overall
from passhat.gate.registration import resolve_gate
from passhat.gate.schema import GateFile
from passhat.gate.stored import GATE_RESULT
from passhat.models import BaselineInfo, ExcludedCase, GateResult, Manifest, RunRef
from passhat.models.manifest import SequentialGateInfo
from passhat.runner.store import RunStore


def unreachable_before_run(run_folder: Path, manifest: Manifest) -> list[str]:
    """What the run's registered gate cannot do with these cases (``gate.evaluate.unreachable_rules``), for the
    runner to say after writing the manifest and before the first trial; nothing when the run has no gate."""
    registered = manifest.gate
    if registered is None:
        return []
    try:  # the rules recorded at registration: no file is read, and a warning never stops a run
        gate = GateFile.model_validate(registered.gate)
    except ValidationError:
        return []  # the gate's own evaluation after the trials says what is wrong
    inp = GateInput(LoadedRun(run_folder, manifest, {}), None, None, Path(registered.path).parent, gate.alpha)
    return unreachable_rules(gate, inp)


def evaluate_gate(
    run_folder: Path, gate_path: Path | None = None, baseline_folder: Path | None = None, *,
    allow_gate_change: bool = False, allow_changed_cases: bool = False, source: str = "api",
) -> GateResult:
    """The gate result for a run (the content of gate.json). Bad input raises a ``PasshatError``.

    A fixed-design run is gated only when it is finished, and not again after its trials changed
    (``gate.ledger``); a sequential run is gated at its planned looks (``gate.looks``). Every evaluation is
    recorded in ``RUN/gate-looks.jsonl`` (``source`` says who asked: ``passhat gate``, ``passhat run``, ``api``).
    """
    run_folder = Path(run_folder)
    manifest = read_manifest(run_folder)
    resolved = resolve_gate(manifest, gate_path, allow_gate_change=allow_gate_change,
                            manifest_path=str(run_folder / "manifest.json"))
    block = manifest.sequential
    if block is not None:
        baseline_folder = recorded_baseline(run_folder, block, baseline_folder)
    baseline = require_trials(load_run(baseline_folder), "--baseline") if baseline_folder is not None else None
    sequential = None
    if block is not None:
        sequential = gate_sequential_run(run_folder, manifest, resolved.gate, resolved.path.parent, str(resolved.path),
                                         baseline, allow_changed_cases=allow_changed_cases)
        run, matching, results = sequential.run, sequential.matching, sequential.gate.results
    else:
        run = load_run(run_folder)
        refuse_unfinished(run_folder, manifest, sum(t.n + t.errors for t in run.tallies.values()))
        refuse_new_trials(run_folder)
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
    # the run as the manifest describes it (a sequential run's look views set trials and status for the rules)
    described = load_run_describe(run_folder, manifest)
    result = GateResult(outcome=outcome, exit_code=EXIT_CODES[outcome], gate=resolved.info, run=described,
                        baseline=baseline_block, allow_changed_cases=allow_changed_cases,
                        evaluated_at=datetime.now(UTC).isoformat(), passhat_version=__version__, rules=results,
                        sequential=None if sequential is None else sequential_block(sequential))
    stopped = sequential.gate.stopped if sequential is not None else None
    record_look(run_folder, source=source, outcome=outcome, gate_sha256=resolved.info.sha256,
                baseline=str(baseline_folder) if baseline_folder is not None else None,
                trials=sum(t.n + t.errors for t in run.tallies.values()) if sequential is None else sequential.trials_run,
                sequential_look=None if sequential is None else len(sequential.gate.looks),
                stopped=None if stopped is None else stopped.stop)
    return result


def read_manifest(run_folder: Path) -> Manifest:
    """The run's manifest; a folder without a usable one is bad input (as for ``load_run``)."""
    try:
        return RunStore(run_folder).manifest()
    except RunError as exc:
        raise CompareError(str(exc)) from None


def load_run_describe(run_folder: Path, manifest: Manifest) -> RunRef:
    """gate.json's ``run`` block (what ``LoadedRun.describe`` says), from the manifest alone."""
    return LoadedRun(run_folder, manifest, {}).describe()


def sequential_block(run: SequentialRun) -> SequentialGateInfo:
    """gate.json's ``sequential`` block: the looks and where the run stopped."""
    from passhat.gate.looks import stop_record

    return SequentialGateInfo(
        looks=[look.record() for look in run.gate.looks], looks_planned=len(run.design.looks),
        stopped=stop_record(run.design, run.gate, cases=len(run.run.tallies), trials_run=run.trials_run))


def write_gate_result(run_folder: Path, result: GateResult) -> Path:
    """Write ``gate.json`` into the run folder (atomically: never half a file)."""
    return result.dump(Path(run_folder) / GATE_RESULT)
