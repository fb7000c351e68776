"""The worker side of the Ray executor: one long-lived process that runs trials of one run.

A worker is built from a :class:`WorkerRecipe`, which holds references, not objects: it loads the suite
itself (by built-in name or folder, then checks the case and domain hashes against the driver's), builds
each fixture image once, and rebuilds the agent, user simulator and judge with the recipe's factory.
Then it runs the attempts the driver sends, many at once on its own event loop, and returns each record
as JSON; it never writes to the run folder. Nothing here imports Ray: the driver wraps
:class:`TrialWorker` as an actor (runner/ray_executor.py).

That loop is watched as the local run's is (runner/watchdog.py, docs/design/022): a trial whose time
another agent took is an infrastructure error, retried. An agent that holds the loop past its limit and
the grace cannot be stopped here either, and no call on that loop can return; so :meth:`TrialWorker.blocked`
and :meth:`TrialWorker.alive` are called on a loop of their own (a Ray concurrency group, :data:`WATCH_GROUP`),
which answers the driver while the trials' loop is blocked. The driver records the trial and replaces the
worker (runner/dispatch.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passhat.cases import Suite, load_suite
from passhat.cases.suite import BUILTIN_ROOT
from passhat.errors import RunError
from passhat.runner import watchdog
from passhat.runner.collector import run_collector
from passhat.runner.executor import attempt_once
from passhat.runner.run import RunConfig
from passhat.runner.trial import blocked_record
from passhat.runner.watchdog import CURRENT_WATCHDOG, LoopWatchdog, TrialSlot
from passhat.seeding import trial_seed
from passhat.tools.cassette import Cassette

WATCH_GROUP = "watch"
"""The Ray concurrency group (a thread and event loop of its own) that :meth:`TrialWorker.blocked` and
:meth:`TrialWorker.alive` run in: one long wait and one liveness check at a time."""
WATCH_GROUP_SIZE = 2


@dataclass(frozen=True)
class SuiteRef:
    """How a worker finds the run's suite: a built-in name or a folder, the chosen cases, and the hashes
    they must have (a worker that sees other files refuses to run rather than measure something else)."""

    ref: str
    """The built-in suite's name, or the folder's absolute path on the driver."""
    given: str
    """The folder as the driver was given it (tried when ``ref`` does not exist on the worker's machine,
    e.g. a working directory uploaded by ``ray job submit --working-dir``)."""
    case_hashes: dict[str, str]
    """The chosen cases, in run order, and their content hashes."""
    domain_hashes: dict[str, str]

    @classmethod
    def of(cls, suite: Suite) -> SuiteRef:
        folder = suite.folder.resolve()
        builtin = folder.parent.parent == BUILTIN_ROOT and folder.name == "cases"
        return cls(ref=folder.parent.name if builtin else str(folder), given=str(suite.folder),
                   case_hashes=suite.case_hashes(),
                   domain_hashes={name: d.content_hash() for name, d in suite.domains.items()})

    def load(self) -> Suite:
        """The suite with the chosen cases only; raises :class:`RunError` when this machine's files differ."""
        ref = self.ref if Path(self.ref).is_dir() or "/" not in self.ref else self.given
        full = load_suite(ref)
        by_id = {c.id: c for c in full.cases}
        missing = [cid for cid in self.case_hashes if cid not in by_id]
        changed = [cid for cid, h in self.case_hashes.items() if cid in by_id and by_id[cid].content_hash() != h]
        changed += [f"domain {n}" for n, h in self.domain_hashes.items() if n in full.domains
                    and full.domains[n].content_hash() != h]
        if missing or changed:
            raise RunError(f"a Ray worker on {os.uname().nodename} loaded suite {ref!r} but its files differ from the "
                           f"driver's (missing: {', '.join(missing) or 'none'}; changed: {', '.join(changed) or 'none'}); "
                           "every node must see the same suite files (ray job submit --working-dir, or a shared volume)")
        cases = [by_id[cid] for cid in self.case_hashes]
        return dataclasses.replace(full, cases=cases, files={c.id: full.files[c.id] for c in cases})


@dataclass(frozen=True)
class WorkerRecipe:
    """Everything a worker needs to run trials of a run, picklable (Ray sends it with cloudpickle)."""

    suite: SuiteRef
    setup: Callable[[], Any]
    """Builds the agent, user simulator and judge on the worker: returns an object with ``agent``,
    ``user`` and ``judge`` attributes (:class:`passhat.api.roles.ModelSetup`)."""
    agent_spec: str
    trials: int
    seed: int
    cassette: Cassette | None = None
    grace_s: float = dataclasses.field(default_factory=lambda: watchdog.GRACE_S)
    """The driver's :data:`~passhat.runner.watchdog.GRACE_S`, taken when the recipe is made: the driver's
    deadlines count on the workers giving up at the same moment."""
    what: str = "Ray worker"
    """What the worker is called in the reason recorded for a trial its watchdog gives up on."""


class TrialWorker:
    """Runs attempts of one run's trials; the driver makes it a Ray actor (async methods share one loop)."""

    def __init__(self, recipe: WorkerRecipe) -> None:
        suite = recipe.suite.load()
        parts = recipe.setup()
        self.cfg = RunConfig(suite=suite, agent=parts.agent, agent_spec=recipe.agent_spec, trials=recipe.trials,
                             seed=recipe.seed, user=parts.user, judge=parts.judge, cassette=recipe.cassette)
        self.cases = {c.id: c for c in suite.cases}
        for case in suite.cases:  # each fixture image once per worker, before the first trial asks for it
            suite.domain_of(case).world_images(case.fixture)
        self.grace_s = recipe.grace_s
        self.what = recipe.what
        self.dog: LoopWatchdog | None = None
        self.verdict: tuple[str, str] | None = None
        """The blocked trial's record (JSON) and why, once the watchdog has given up on it."""
        self.given_up = threading.Event()
        self._collector = contextlib.ExitStack()

    async def ready(self) -> int:
        """The worker's process id, once it is built (the driver waits for every worker before the first trial).
        The watchdog starts here: this runs on the loop the attempts run on (``__init__`` does not)."""
        if self.dog is None:
            self.dog = LoopWatchdog(on_abort=self._give_up, exit_on_abort=False, ending=f"{self.what} replaced",
                                    grace_s=self.grace_s)
            self.dog.start()
            # the local run's collector setting (docs/design/034): the suite and images loaded, frozen out of
            # collections while this worker runs trials; :meth:`close` restores it
            self._collector.enter_context(run_collector())
        return os.getpid()

    async def run(self, case_id: str, trial: int, attempt: int) -> tuple[str, bool]:
        """One attempt: the record as JSON and whether it raised (see :func:`passhat.runner.executor.attempt_once`)."""
        token = CURRENT_WATCHDOG.set(self.dog)  # each call is a task of its own, with its own context
        try:
            record, raised = await attempt_once(self.cases[case_id], self.cfg, trial, attempt)
        finally:
            CURRENT_WATCHDOG.reset(token)
        return record.model_dump_json(), raised

    async def blocked(self) -> tuple[str, str] | None:
        """In :data:`WATCH_GROUP`: waits until the watchdog gives up on a trial, then returns its record (JSON,
        ``fail`` / ``time_limit``) and why; ``None`` when the worker is closed first."""
        await asyncio.to_thread(self.given_up.wait)
        return self.verdict

    async def alive(self) -> bool:
        """In :data:`WATCH_GROUP`: answers unless something keeps the GIL (then not even the watchdog runs)."""
        return True

    def _give_up(self, slot: TrialSlot, why: str) -> None:
        """On the watchdog's thread, the trials' loop blocked for good: the verdict :meth:`blocked` returns."""
        case = self.cases[slot.case_id]
        record = blocked_record(case, slot, trial_seed(self.cfg.seed, case.id, slot.trial), why)
        self.verdict = (record.model_dump_json(), why)
        self.given_up.set()

    async def close(self) -> None:
        """Stop what the agent runs elsewhere (a tool server of a service or command agent), and remove the
        workspace images: the driver kills the worker next, and a killed process runs no exit handlers."""
        self.given_up.set()  # a pending blocked() returns None
        if self.dog is not None:
            self.dog.stop()
        self._collector.close()
        close = getattr(self.cfg.agent, "aclose", None)
        if close is not None:
            await close()
        for domain in self.cfg.suite.domains.values():
            domain.close_workspaces()
