"""Running a sequential design: trials in rounds, the gate at each look, stop once it is decided.

``evaluate(..., gate=FILE, sequential=Sequential(looks=(4, 8, 16)))`` (``passhat run --gate FILE
--sequential``) hands the runner the looks and :meth:`SequentialPlan.at_look`: after every case has the
look's trials, the registered gate is evaluated at the look (``gate.looks``, in a worker thread: the
bootstraps take CPU) and the look is written into ``manifest.sequential`` before the next round starts.

This module sits above the gate and the runner (it imports both); nothing below imports it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passhat.errors import PasshatError
from passhat.models.manifest import SequentialRecord
from passhat.sequential.design import Sequential


@dataclass
class SequentialPlan:
    """A sequential run's design and baseline, checked before the first trial."""

    design: Sequential
    baseline: Path | None
    """The baseline run the gate's looks compare with (None: baseline rules are SKIPPED)."""
    record: dict[str, Any]
    """``manifest.sequential`` before the first look."""

    async def at_look(self, folder: Path, trials: int) -> tuple[bool, dict[str, Any]]:
        """The runner's callback (``runner.run.AtLook``): evaluate the gate at the look of ``trials``."""
        block = await asyncio.to_thread(self._evaluate, folder, trials)
        return block.stopped is not None, {"sequential": block}

    def _evaluate(self, folder: Path, trials: int) -> SequentialRecord:
        from passhat.compare import load_run, match_cases
        from passhat.gate.looks import complete_looks, evaluate_looks, look_block, look_runs
        from passhat.gate.schema import GateFile
        from passhat.results.tally import tally_records
        from passhat.runner.store import TRIALS, RunStore

        manifest = RunStore(folder).read_manifest()
        registered = manifest["gate"]
        gate = GateFile.model_validate(registered["gate"])  # the rules registered before the first trial
        records = list(tally_records(folder / TRIALS))
        ids = list(manifest["suite"]["cases"])
        upto = self.design.looks.index(trials) + 1
        if complete_looks(records, ids, self.design) < upto:
            raise PasshatError(f"{folder}: look {upto} ({trials} trials per case) is missing trials after its round")
        views = look_runs(folder, manifest, records, self.design, upto)
        baseline = load_run(self.baseline) if self.baseline is not None else None
        matching = match_cases(baseline, views[-1], allow_changed_cases=False) if baseline is not None else None
        result = evaluate_looks(gate, self.design, views, baseline, matching, Path(registered["path"]).parent,
                                registered["path"], finished=False)
        block = look_block(self.design, result, cases=len(ids), trials_run=len(records),
                           baseline=self.record.get("baseline"))
        return SequentialRecord.model_validate(block)


def plan_sequential(design: Sequential | None, *, gated: bool, old_manifest: dict[str, Any] | None,
                    baseline: str | Path | None, executor: str) -> SequentialPlan | None:
    """The plan of a new or resumed sequential run, or None for a fixed design; bad input raises.

    A resumed run continues the design it started with: given again it must be the same, and a run that
    started fixed cannot become sequential (its trials ran without looks), nor the other way round.
    """
    old = (old_manifest or {}).get("sequential")
    if old_manifest is not None:
        if old is None:
            if design is not None:
                raise PasshatError("cannot resume as a sequential run: this run started with a fixed number of trials")
            return None
        recorded = Sequential.from_record(old["design"])
        if design is not None and design != recorded:
            raise PasshatError(f"cannot resume with looks {list(design.looks)}: this run's sequential design has "
                               f"looks {list(recorded.looks)}; a run keeps the design it started with")
        given = Path(baseline).resolve() if baseline is not None else None
        kept = old.get("baseline")
        if given is not None and (kept is None or Path(kept["folder"]) != given):
            raise PasshatError("cannot resume with another baseline: a sequential run's looks compare with the "
                               "baseline it started with")
        return SequentialPlan(recorded, Path(kept["folder"]) if kept else None,
                              {"design": old["design"], "baseline": kept, "looks": []})
    if design is None:
        return None
    if not gated:
        raise PasshatError("--sequential needs --gate FILE: a sequential run stops once its gate is decided")
    if executor != "local":
        raise PasshatError("--sequential runs on the local executor (--executor ray runs a fixed number of trials)")
    kept = _baseline_record(Path(baseline)) if baseline is not None else None
    return SequentialPlan(design, Path(kept["folder"]) if kept else None,
                          {"design": design.record(), "baseline": kept, "looks": []})


def _baseline_record(folder: Path) -> dict[str, Any]:
    """The baseline as ``manifest.sequential.baseline`` records it; a folder that is not a finished run is bad input."""
    from passhat.compare import load_run
    from passhat.gate.ledger import trials_size

    run = load_run(folder)
    if run.manifest.get("status") != "complete":
        raise PasshatError(f"--baseline {folder}: the run is not finished (status {run.manifest.get('status')!r}); "
                           "a sequential run's looks compare with a baseline that does not change")
    return {"folder": str(folder.resolve()), "trials_bytes": trials_size(folder)}
