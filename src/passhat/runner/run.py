"""Running a suite: k trials per case, bounded concurrency, streamed records, resumable.

This process is the run folder's single writer: an executor (runner/executor.py; local asyncio workers
by default, or a Ray cluster) runs the pending (case, trial) pairs and hands back each final record,
which is appended here in fsync'd batches, off the event loop (runner/commit.py). A record is reported
(``on_record``) only once it is durable.
"""

from __future__ import annotations

import functools
import platform
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from passhat import __version__
from passhat.agents.protocol import Agent
from passhat.cases import Suite
from passhat.cases.suite import suite_hash
from passhat.errors import RunError
from passhat.graders.judge import Judge
from passhat.models import Manifest
from passhat.redaction import Redactor
from passhat.runner.collector import run_collector
from passhat.runner.commit import GroupCommit
from passhat.runner.executor import MAX_ATTEMPTS, Executor, LocalExecutor
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore
from passhat.runner.trial import UserFactory, blocked_record
from passhat.runner.watchdog import TrialSlot, watching_loop
from passhat.seeding import trial_seed
from passhat.suites.locate import suite_location
from passhat.tools.cassette import Cassette
from passhat.tools.faults import planned_faults

__all__ = ["MAX_ATTEMPTS", "MAX_CONCURRENCY", "MAX_PLANNED_TRIALS", "MAX_TRIALS", "RunConfig", "build_manifest",
           "check_limits", "check_resumable", "execute"]

MAX_TRIALS = 1000
"""Trials per case at most. ``summary.json`` keeps pass^k and pass@k with intervals for every k up to the
trial count, for every case, so its size and the time to build it grow with cases × trials; and 1000
passing trials already bound a case's failure rate below 0.3 % (Clopper–Pearson, 95 %), finer than any
gate asks. More evidence comes from more cases, not from more repeats of one."""
MAX_PLANNED_TRIALS = 1_000_000
"""Cases × trials at most in one run: a record is ~10 KB, so a million trials is ~10 GB of ``trials.jsonl``
(and the plan is held in memory). ``-k 2000000`` on a 16-case suite planned 32 million and reached 2.6 GB
before its first trial."""
MAX_CONCURRENCY = 1000
"""Trials in flight at most: each holds a world (a SQLite copy, a workspace folder, for external agents a
tool server and its sockets), and the usual open-file limit is 1024. Beyond the plan's size extra
workers would only idle, so a run uses at most as many as it has trials to run."""


def check_limits(trials: int, concurrency: int, cases: int | None = None) -> None:
    """``trials`` and ``concurrency`` within 1 and :data:`MAX_TRIALS` / :data:`MAX_CONCURRENCY`, and the plan
    (``cases`` × ``trials``) within :data:`MAX_PLANNED_TRIALS`; otherwise a :class:`RunError` saying why."""
    if not 1 <= trials <= MAX_TRIALS:
        raise RunError(f"trials (-k) must be between 1 and {MAX_TRIALS}, got {trials}: the summary holds every "
                       f"pass^k up to it, and {MAX_TRIALS} passing trials already bound a failure rate below 0.3 %")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise RunError(f"concurrency (-j) must be between 1 and {MAX_CONCURRENCY}, got {concurrency}: each trial in "
                       "flight holds a world and open files")
    if cases is not None and cases * trials > MAX_PLANNED_TRIALS:
        raise RunError(f"{cases} case(s) × {trials} trial(s) = {cases * trials:,} trials is more than one run holds "
                       f"({MAX_PLANNED_TRIALS:,}, ~10 KB of records each): fewer trials, or split the suite "
                       "(--split, --tag, --case)")


@dataclass
class RunConfig:
    """What to run; everything here goes into the manifest."""

    suite: Suite
    agent: Agent
    agent_spec: str
    trials: int
    seed: int = 0
    concurrency: int = 4
    out: Path = Path("runs/latest")
    extra_manifest: dict[str, Any] = field(default_factory=dict)
    redactor: Redactor = field(default_factory=Redactor)
    """Applied to every record before it reaches disk (on by default: e-mail, phone, card numbers)."""
    user: UserFactory | None = None
    """The user simulator per trial (default: the scripted user of each case)."""
    judge: Judge | None = None
    """The LLM judge for cases with a ``judge:`` section (without one, such cases' judge grades fail)."""
    cassette: Cassette | None = None
    """Record (``--record``) or replay (``--replay``) the domain's external tools (tools/cassette.py)."""

    def __post_init__(self) -> None:
        if self.seed < 0:  # checked here too, for library users: the CLI's option refuses it already
            raise RunError(f"seed must be ≥ 0, got {self.seed}")
        check_limits(self.trials, self.concurrency, len(self.suite.cases))


def build_manifest(cfg: RunConfig) -> Manifest:
    """The manifest of a new run (``extra_manifest`` adds the plan's, the models' and the gate's entries)."""
    suite = cfg.suite
    cases, domains = suite.case_hashes(), suite.domain_hashes()  # each once: the suite's hash is made of them
    return Manifest.from_dict({
        "passhat_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "suite": {"name": suite.name, **suite_location(suite.folder, cfg.out), "hash": suite_hash(cases, domains),
                  "cases": cases,
                  "case_meta": {c.id: {"tags": c.tags, "group": c.group, "split": c.split, "domain": c.domain,
                                       "fixture": c.fixture, "identity": c.user.identity,
                                       **planned_faults(c.faults)} for c in suite.cases},
                  "domains": domains,
                  "fixtures": suite.fixture_hashes()},
        "agent": cfg.agent_spec,
        "trials": cfg.trials,
        "seed": cfg.seed,
        "concurrency": cfg.concurrency,
        "redaction": cfg.redactor.describe(),
        "cassette": cfg.cassette.describe() if cfg.cassette is not None else None,
        "started_at": datetime.now(UTC).isoformat(),
        "finished_at": None,
        "status": "running",
        **cfg.extra_manifest,
    }, "the run's manifest")


def check_resumable(old: Manifest, new: Manifest) -> None:
    """A run can only be resumed with the same suite, agent, trials and seed."""
    for key in ("agent", "trials", "seed", "models", "isolate"):
        if getattr(old, key) != getattr(new, key):
            raise RunError(f"cannot resume: {key} was {getattr(old, key)!r}, now {getattr(new, key)!r}")
    if old.suite.hash != new.suite.hash:
        raise RunError("cannot resume: the suite changed since the run started (different content hash)")


AtLook = Callable[[int], Awaitable[tuple[bool, dict[str, Any]]]]
"""Called after the trials below each look are durable, with the look's trials per case; returns whether to
stop there, and manifest fields to record (written at once). A sequential run's gate (``passhat.sequential``)."""


async def execute(
    cfg: RunConfig,
    *,
    resume: bool = False,
    on_record: Callable[[TrialRecord], None] | None = None,
    executor: Executor | None = None,
    looks: Sequence[int] = (),
    at_look: AtLook | None = None,
    on_start: Callable[[Manifest], None] | None = None,
) -> RunStore:
    """Run every pending trial of the suite into ``cfg.out`` with ``executor`` (default: local asyncio
    workers); returns the store. ``on_record`` sees each record once it is durable in ``trials.jsonl``.

    ``looks`` (increasing trials per case, the last ``cfg.trials``) runs the trials in rounds: every case to
    the first look, then ``at_look``, then to the next look, until ``at_look`` says stop. A resumed run
    re-takes the looks whose trials are all recorded (without running any) and goes on from the first that
    is not: no trial runs twice, none is lost. ``on_start`` sees the manifest once it is written, before the
    first trial (what the run's registered gate can decide is said then)."""
    executor = executor or LocalExecutor()
    store = RunStore(cfg.out, cfg.redactor)
    manifest = build_manifest(cfg)
    manifest.executor = executor.describe()
    done: set[tuple[str, int]] = set()
    store.lock()
    try:
        if resume:
            old = store.manifest()
            check_resumable(old, manifest)
            manifest.started_at = old.started_at
            manifest.resumed_at = [*old.resumed_at, datetime.now(UTC).isoformat()]
            manifest.replaced_workers = list(old.replaced_workers)  # the records they explain are kept too
            done = {r.key for r in store.iter_records()}
        elif (cfg.out / "trials.jsonl").exists() and any(store.iter_records()):
            raise RunError(f"{cfg.out} already holds a run; use --resume to continue it or choose another --out")
        store.write_manifest(manifest)
        store.open_for_append()
        if on_start is not None:
            on_start(manifest)
    except BaseException:
        store.close()
        raise

    rounds = list(looks) or [cfg.trials]
    if rounds[-1] != cfg.trials or any(b <= a for a, b in zip(rounds, rounds[1:], strict=False)):
        raise RunError(f"looks must increase and end at the run's {cfg.trials} trials per case, got {rounds}")
    writer = GroupCommit(store, on_record)

    def note_replaced(why: str) -> None:  # written at once: a run that dies later still says it happened
        manifest.replaced_workers = [*manifest.replaced_workers, why]  # assigned: the file holds fields set
        store.write_manifest(manifest)

    try:
        try:
            with (run_collector(),  # the suite, loaded, is left out of collections while trials run
                  watching_loop(on_abort=functools.partial(_record_abort, cfg, store, manifest, writer))):
                for upto in rounds:
                    pending = [(case, trial) for case in cfg.suite.cases for trial in range(upto)
                               if (case.id, trial) not in done]
                    if pending:
                        await writer.guard(executor.run(cfg, pending, writer.submit, replaced=note_replaced))
                        done.update((case.id, trial) for case, trial in pending)
                    if at_look is None:
                        continue
                    stop, fields = await at_look(upto)
                    for key, value in fields.items():  # assigned: the file holds the fields that were set
                        setattr(manifest, key, value)
                    store.write_manifest(manifest)
                    if stop:
                        break
        finally:
            close = getattr(cfg.agent, "aclose", None)
            if close is not None:  # agents that run elsewhere stop their tool server
                await close()
        manifest.finished_at = datetime.now(UTC).isoformat()
        manifest.status = "complete"
        store.check_trials_file()  # records written into a file that vanished are not a run: say so
        store.write_manifest(manifest)
    finally:
        store.close()  # the records are durable already; this also releases the folder's lock
    return store


def _record_abort(cfg: RunConfig, store: RunStore, manifest: Manifest, writer: GroupCommit, slot: TrialSlot,
                  why: str) -> None:
    """What the loop's watchdog keeps of a run it aborts (from its thread, the loop blocked): the blocked
    trial's record (:func:`~passhat.runner.trial.blocked_record`), queued for the hard exit's last write, and
    ``status: aborted`` in the manifest. The trial is recorded so that ``--resume`` goes on with the others
    instead of hanging again."""
    case = next(c for c in cfg.suite.cases if c.id == slot.case_id)
    writer.queue_now(blocked_record(case, slot, trial_seed(cfg.seed, case.id, slot.trial), why))
    manifest.status = "aborted"
    manifest.aborted_because = why
    store.write_manifest(manifest)
