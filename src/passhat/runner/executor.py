"""Where trials run: the seam between the run (store, resume, manifest) and the machinery that runs trials.

An :class:`Executor` is given the pending (case, trial) pairs and a callback; it runs every pair to a
final record and hands each one to the callback, in the order they finish. The callback is the run's
single writer (it queues the record for the next fsync'd batch and returns at once), so whatever the
executor, ``trials.jsonl``, ``--resume`` and everything downstream stay the same.
:class:`LocalExecutor` is the default: asyncio workers in this process. The Ray executor
(:mod:`passhat.runner.ray_executor`) spreads them over a cluster.

The retry policy is here, once, for both: an attempt that raised (infrastructure) is retried until
:data:`MAX_ATTEMPTS`; a record's ``attempt`` says which attempt produced it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from passhat.cases import Case
from passhat.runner.records import TrialRecord
from passhat.runner.trial import error_record, run_trial
from passhat.runner.turns import turns
from passhat.seeding import trial_seed

if TYPE_CHECKING:
    from passhat.runner.run import RunConfig

MAX_ATTEMPTS = 2
"""An infrastructure error is retried once; what remains is reported as ``error``."""

Emit = Callable[[TrialRecord], None]
"""Receives each final record as it finishes (the run queues it for ``trials.jsonl``; it must not block)."""
Replaced = Callable[[str], None]
"""Told why the executor killed and replaced one of its workers (an agent held the worker's event loop):
the run notes it in the manifest at once, and a run with any such note is not reported as clean."""


class Executor(Protocol):
    """Runs (case, trial) pairs of a run to their final records."""

    async def run(self, cfg: RunConfig, pending: Sequence[tuple[Case, int]], emit: Emit, *,
                  replaced: Replaced | None = None) -> None:
        """Run every pair in ``pending`` with at most ``cfg.concurrency`` in flight; ``emit`` each final record,
        and tell ``replaced`` about each worker given up on."""
        ...

    def describe(self) -> dict[str, object]:
        """The manifest's ``executor`` block: what ran the trials."""
        ...


async def attempt_once(case: Case, cfg: RunConfig, trial: int, attempt: int) -> tuple[TrialRecord, bool]:
    """One attempt at a trial: its record and whether it raised (an infrastructure failure worth a retry).
    A record that is ``error`` without raising (a stale cassette) is final, as retrying cannot change it."""
    seed = trial_seed(cfg.seed, case.id, trial)
    started = time.perf_counter()
    try:
        record = await run_trial(case, cfg.suite.domain_of(case), cfg.agent, trial, seed, user=cfg.user,
                                 judge=cfg.judge, cassette=cfg.cassette)
    except Exception as exc:
        return error_record(case, trial, seed, attempt, started, exc), True
    record.attempt = attempt
    return record, False


async def run_attempts(case: Case, cfg: RunConfig, trial: int) -> TrialRecord:
    """A trial's final record: attempts until one does not raise, or the last allowed one."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        record, raised = await attempt_once(case, cfg, trial, attempt)
        if not raised:
            break
    return record


class LocalExecutor:
    """``cfg.concurrency`` asyncio workers in this process pulling pairs from a queue (memory stays
    O(concurrency) whatever the number of trials)."""

    async def run(self, cfg: RunConfig, pending: Sequence[tuple[Case, int]], emit: Emit, *,
                  replaced: Replaced | None = None) -> None:
        """``replaced`` is never called: a blocked loop here is the run's own, and its watchdog aborts the run."""
        queue: asyncio.Queue[tuple[Case, int]] = asyncio.Queue()
        for item in pending:
            queue.put_nowait(item)

        async def worker() -> None:
            # Lanes start one per loop iteration (runner/turns.py): starting a lane (its world's copy, made new
            # here, and its agent until it first waits) costs ~1 ms, and 256 lanes all started in the iteration
            # gather runs them in held every timer for a quarter of a second, the first lanes' model answers
            # included (docs/design/040). Between two lanes' starts the loop now fires what fell due.
            await turns().take()
            while True:
                try:
                    case, trial = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                emit(await run_attempts(case, cfg, trial))

        # no more workers than trials to run: the others would only start and stop (-j is bounded to the plan)
        await asyncio.gather(*(worker() for _ in range(max(1, min(cfg.concurrency, len(pending))))))

    def describe(self) -> dict[str, object]:
        return {"kind": "local"}
