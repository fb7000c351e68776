"""The worker side of the Ray executor: one long-lived process that runs trials of one run.

A worker is built from a :class:`WorkerRecipe`, which holds references, not objects: it loads the suite
itself (by built-in name or folder, then checks the case and domain hashes against the driver's), builds
each fixture image once, and rebuilds the agent, user simulator and judge with the recipe's factory.
Then it runs the attempts the driver sends, many at once on its own event loop, and returns each record
as JSON; it never writes to the run folder. Nothing here imports Ray: the driver wraps
:class:`TrialWorker` as an actor (runner/ray_executor.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passhat.cases import Suite, load_suite
from passhat.cases.suite import BUILTIN_ROOT
from passhat.errors import RunError
from passhat.runner.executor import attempt_once
from passhat.runner.run import RunConfig
from passhat.tools.cassette import Cassette


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
    ``user`` and ``judge`` attributes (:class:`passhat.agents.llm.setup.ModelSetup`)."""
    agent_spec: str
    trials: int
    seed: int
    cassette: Cassette | None = None


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

    async def ready(self) -> int:
        """The worker's process id, once it is built (the driver waits for every worker before the first trial)."""
        return os.getpid()

    async def run(self, case_id: str, trial: int, attempt: int) -> tuple[str, bool]:
        """One attempt: the record as JSON and whether it raised (see :func:`passhat.runner.executor.attempt_once`)."""
        record, raised = await attempt_once(self.cases[case_id], self.cfg, trial, attempt)
        return record.model_dump_json(), raised

    async def close(self) -> None:
        """Stop what the agent runs elsewhere (a tool server of a service or command agent), and remove the
        workspace images: the driver kills the worker next, and a killed process runs no exit handlers."""
        close = getattr(self.cfg.agent, "aclose", None)
        if close is not None:
            await close()
        for domain in self.cfg.suite.domains.values():
            domain.close_workspaces()
