"""Running a sequential design: trials in rounds, the gate at each look, stop once it is decided.

``evaluate(..., gate=FILE, sequential=(4, 8, 16))`` (``passhat run --gate FILE --sequential``) hands the
runner the looks and :meth:`SequentialPlan.at_look`: after every case has the look's trials, the registered
gate is evaluated at the look (``gate.looks``, in a worker thread: the bootstraps take CPU) and the look is
written into ``manifest.sequential`` before the next round starts.

It uses the runner's store and the gate's looks; the library (``api.evaluation``) calls it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from passhat.errors import PasshatError
from passhat.models.manifest import SequentialBaseline, SequentialRecord
from passhat.sequential.design import Sequential

if TYPE_CHECKING:
    from passhat.models import Manifest


@dataclass
class SequentialPlan:
    """A sequential run's design and baseline, checked before the first trial."""

    design: Sequential
    baseline: Path | None
    """The baseline run the gate's looks compare with (None: baseline rules are SKIPPED)."""
    record: SequentialRecord
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

        manifest = RunStore(folder).manifest()
        registered = manifest.gate
        if registered is None:
            raise PasshatError(f"{folder}: a sequential run needs its registered gate, and the manifest has none")
        gate = GateFile.model_validate(registered.gate)  # the rules registered before the first trial
        records = list(tally_records(folder / TRIALS))
        ids = list(manifest.suite.cases)
        upto = self.design.looks.index(trials) + 1
        if complete_looks(records, ids, self.design) < upto:
            raise PasshatError(f"{folder}: look {upto} ({trials} trials per case) is missing trials after its round")
        views = look_runs(folder, manifest, records, self.design, upto)
        baseline = load_run(self.baseline) if self.baseline is not None else None
        matching = match_cases(baseline, views[-1], allow_changed_cases=False) if baseline is not None else None
        result = evaluate_looks(gate, self.design, views, baseline, matching, Path(registered.path).parent,
                                registered.path, finished=False)
        return look_block(self.design, result, cases=len(ids), trials_run=len(records), baseline=self.record.baseline)


def plan_sequential(looks: tuple[int, ...] | None, old_manifest: Manifest | None, *, gated: bool, executor: str,
                    baseline: Path | None, trials: int | None) -> SequentialPlan | None:
    """The plan of a new or resumed sequential run, or None for a fixed design; bad input raises
    :class:`PasshatError` before any trial. ``trials``: the trials per case the caller asked for, if any.

    A resumed run continues the design it started with (its options, looks included, are the manifest's:
    ``api.options.continue_options``); a run that started fixed cannot become sequential.
    """
    if old_manifest is not None:
        old = old_manifest.sequential
        if old is None:
            if looks is not None:
                raise PasshatError("cannot resume as a sequential run: this run started with a fixed number of trials")
            return None
        design = Sequential.from_record(old.design)
        if looks is not None and tuple(looks) != design.looks:
            raise PasshatError(f"cannot resume with looks {list(looks)}: this run's sequential design has looks "
                               f"{list(design.looks)}; a run keeps the design it started with")
        return SequentialPlan(design, Path(old.baseline.folder) if old.baseline else None,
                              SequentialRecord(design=old.design, baseline=old.baseline))
    if looks is None:
        return None
    design = Sequential(tuple(looks))
    if not gated:
        raise PasshatError("--sequential needs --gate FILE: a sequential run stops once its gate is decided")
    if executor == "ray":
        raise PasshatError("--sequential runs on the local executor (--executor ray runs a fixed number of trials)")
    if trials is not None and trials != design.max_trials:
        raise PasshatError(f"trials={trials} and sequential={list(design.looks)}: a sequential run's trials per case "
                           "are its looks")
    kept = _baseline_record(baseline) if baseline is not None else None
    record = SequentialRecord(design=design.record(), baseline=kept)
    return SequentialPlan(design, Path(kept.folder) if kept else None, record)


def _baseline_record(folder: Path) -> SequentialBaseline:
    """The baseline as ``manifest.sequential.baseline`` records it; a folder that is not a finished run is bad input."""
    from passhat.compare import load_run
    from passhat.gate.ledger import trials_size

    run = load_run(folder)
    if run.manifest.status != "complete":
        raise PasshatError(f"--baseline {folder}: the run is not finished (status {run.manifest.status!r}); "
                           "a sequential run's looks compare with a baseline that does not change")
    return SequentialBaseline(folder=str(folder.resolve()), trials_bytes=trials_size(folder))
