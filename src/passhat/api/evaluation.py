"""``evaluate(suite, agent, trials=...)``: run a suite k times with an agent and get the :class:`Run` back.

This is the one code path of a run. ``passhat run`` parses its options, calls :func:`evaluate` and prints
what it returns; the pytest plugin calls it too. In order: check every input (agent, suite, selection,
models, gate) before anything is written, claim the run folder, the do-nothing check, the trials
(``runner.execute``), ``summary.json`` (with a stratum for every tag key, so ``show`` and ``report``
reuse it), and the registered gate (``gate.json``). Printing, CI outputs (JUnit, Markdown) and the HTML
report stay with the caller.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec

from passhat.api.options import RunOptions, continue_options
from passhat.api.run import Run
from passhat.cases import Suite, load_suite
from passhat.errors import PasshatError, RunError
from passhat.graders.judge import judge_grader_assertions
from passhat.models import Manifest, Selection
from passhat.redaction import Redactor
from passhat.results.tally import ReportedTally
from passhat.runner.collector import run_collector
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore
from passhat.tools.boundary import not_reached
from passhat.tools.cassette import Cassette

P = ParamSpec("P")
CPU_BOUND_AFTER_S = 5.0
"""A local run's trials that took at least this long with this process busy at least :data:`CPU_BOUND_SHARE` of
the time get a note pointing at ``--executor processes`` (a short run is CPU-bound by nature, and quick)."""
CPU_BOUND_SHARE = 0.75
"""Runs of the reference agents, which never wait, measure 0.89–0.93 on a 2-CPU machine (the group commit's
writes are waits of the loop's thread); a run whose agent waits for its model measures far below."""


@dataclass
class CpuBound:
    """Whether the run's own CPU set its pace: its event loop's thread busy (running, or ready to run and
    waiting for a CPU) nearly all the time its trials took, on a machine with CPUs it could use. Then the
    agents were waiting on the harness, not the other way round, and more trials in flight would not help;
    worker processes would (docs/scale.md)."""

    executor: str
    wall: float
    busy: float
    cpu: float

    @classmethod
    def start(cls, executor: str) -> CpuBound:
        return cls(executor, time.perf_counter(), _busy_s(), time.process_time())

    def note(self, trials: int) -> str | None:
        wall, busy = time.perf_counter() - self.wall, _busy_s() - self.busy
        if self.executor != "local" or wall < CPU_BOUND_AFTER_S or busy < CPU_BOUND_SHARE * wall:
            return None
        from passhat.runner.process_executor import usable_cpus  # only for a run that gets the note

        cpus = usable_cpus()
        if cpus < 2:
            return None
        per_trial = (time.process_time() - self.cpu) / max(trials, 1) * 1000
        return (f"this process was busy {min(busy / wall, 1.0):.0%} of the {wall:.1f} s the trials took ({per_trial:.1f} "
                f"ms of CPU per trial): the harness's own work set the pace, not the agent; --executor processes "
                f"spreads the trials over this machine's {cpus} CPUs (docs/scale.md)")

AgentLike = str | Callable[..., Any]
"""A spec (``careful``, ``module:function``, ``path.py:function``, ``openai:MODEL``, ``anthropic:MODEL``,
``http://…``, ``cmd:"…"``) or a Python agent: an async or plain function of the episode, an instance with
such a ``__call__``, or a class of those."""


class PasshatWarning(UserWarning):
    """Something about a run its reader should know (a case a do-nothing agent passes, an unpriced model)."""


# frames a warning is never attributed to: passhat's own, and the machinery between it and its caller
_MACHINERY = (str(Path(__file__).parents[1]) + os.sep, str(Path(asyncio.__file__).parent) + os.sep,
              str(Path(concurrent.futures.__file__).parent) + os.sep, contextlib.__file__, threading.__file__)


def _caller_stacklevel() -> int:
    """``stacklevel`` for a ``warnings.warn`` in the function that calls this one: the first frame outside
    passhat, asyncio and threads — the line that called :func:`evaluate` (or awaited :func:`evaluate_async`),
    not ``runner/commit.py`` where a record became durable. With no such frame on the stack (a warning from a
    worker thread), a level past the stack: Python then names ``sys:1``, which points at nothing wrong."""
    frame: Any = sys._getframe(1)  # the frame that calls warnings.warn: stacklevel 1
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_MACHINERY):
        frame = frame.f_back
        level += 1
    return level


@dataclass(frozen=True)
class Progress:
    """Where a run stands: reported once before the first trial (``record`` None; on resume, ``done``
    counts the trials already recorded) and after every trial."""

    done: int
    """Trials recorded so far."""
    total: int
    """Trials the run plans (cases × trials)."""
    record: TrialRecord | None = None
    """The trial just recorded."""
    suite: str = ""
    """The suite's name."""
    folder: Path | None = None
    """The run folder (known from the first report on: a stopped run continues there with ``resume``)."""


def agent_name(agent: Any) -> str:
    """How the manifest names a Python agent: ``module:qualname`` (a spec that loads it again when it is
    importable), ``module:Class()`` for an instance."""
    target = agent if callable(agent) and hasattr(agent, "__qualname__") else type(agent)
    suffix = "" if target is agent else "()"
    module = getattr(target, "__module__", None) or "?"
    return f"{module}:{getattr(target, '__qualname__', repr(target))}{suffix}"


def build_redactor(enabled: bool = True, fields: Sequence[str] = (), patterns: Mapping[str, str] | None = None,
                   numbered: bool = False) -> Redactor:
    """The run's redactor: the default patterns (e-mail, phone, card numbers) plus ``fields`` and ``patterns``
    (name → regular expression); a bad expression is bad input. ``numbered``: a placeholder per distinct value."""
    extra: dict[str, str] = {}
    for name, rx in (patterns or {}).items():
        try:
            re.compile(rx)
        except re.error as exc:
            raise PasshatError(f"--redact-pattern {name}: invalid regular expression: {exc}") from None
        extra[name] = rx
    return Redactor.build(extra_fields=tuple(fields), extra_patterns=extra, enabled=enabled, numbered=numbered)


def default_out(suite: str, agent: str) -> Path:
    """``runs/SUITE-AGENT-TIMESTAMP``, claimed (created) here; ``-2``, ``-3``… when taken in the same second."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    safe_agent = re.sub(r"[^A-Za-z0-9._-]+", "_", agent).strip("_")[:60] or "agent"
    base = Path("runs") / f"{suite}-{safe_agent}-{stamp}"
    base.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RunError(f"cannot find a free run folder name next to {base}; pass out=")


def check_same_selection(out: Path, selection: Selection | None) -> None:
    """A resumed run must choose the same cases as the run it continues (same cases, splits and tags)."""
    old = RunStore(out).manifest().selection
    before = old.describe if old else None
    now = selection.describe if selection else None
    if before != now:
        raise PasshatError(f"cannot resume {out}: it ran {'the cases selected by ' + before if before else 'every case'}, "
                           f"this command selects {'the cases selected by ' + now if now else 'every case'}; "
                           "choose the same cases (--split, --tag; cases= from Python) as when it started")


def no_judge_warning(suite: Suite) -> str | None:
    """What a run with no judge model says before its first trial when some cases need one: a ``judge:`` section
    with a required criterion, or a required assertion on a custom grader of kind ``judge``. Both fail closed
    in every trial (``graders.judge``), which the trials' grades alone would say only after the run."""
    rubric: set[str] = set()
    graders: dict[str, None] = {}  # the judge graders asked, each once, in the order the cases ask them
    judged: list[str] = []
    for case in suite.cases:
        if case.judge is not None and any(k.required for k in case.judge.criteria):
            rubric.add(case.id)
        asked = [g.name for a, g in judge_grader_assertions(case, suite.domain_of(case).graders) if a.required]
        graders.update(dict.fromkeys(asked))
        if case.id in rubric or asked:
            judged.append(case.id)
    if not judged:
        return None
    having = [*(["a judge: section"] if rubric else []),
              *([f"an assertion on a judge grader ({', '.join(graders)})"] if graders else [])]
    failing = [*(["judge criteria"] if rubric else []), *(["judge-graded assertions"] if graders else [])]
    return (f"{len(judged)} case(s) have {' or '.join(having)} but this run has no judge model (--judge MODEL): "
            f"{', '.join(judged[:10])}{' …' if len(judged) > 10 else ''} — their {' and '.join(failing)} fail every "
            "trial")


def _busy_s() -> float:
    """Seconds this thread has been running or runnable (Linux's schedstat: on a CPU, and waiting in the run
    queue for one, which a shared machine adds); elsewhere this process's CPU time."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            running, waiting = f.read().split()[:2]
        return (int(running) + int(waiting)) / 1e9
    except (OSError, ValueError):
        return time.process_time()


def _blocking(run_async: Callable[P, Coroutine[Any, Any, Run]]) -> Callable[P, Run]:
    """The blocking form of :func:`evaluate_async`, with its very signature: one definition of the arguments."""

    @functools.wraps(run_async)
    def run(*args: P.args, **kwargs: P.kwargs) -> Run:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise PasshatError("passhat.evaluate() was called inside a running event loop: "
                               "use `await passhat.evaluate_async(...)` there")
        from passhat import shutdown

        async def run_stoppably() -> Run:
            with shutdown.stoppable():  # Ctrl-C / SIGTERM under `passhat run` cancel this task (passhat.shutdown)
                return await run_async(*args, **kwargs)

        try:
            return asyncio.run(run_stoppably())
        except asyncio.CancelledError:
            if shutdown.stop_requested():
                raise KeyboardInterrupt from None
            raise

    return run


async def evaluate_async(
    suite: str | Path | Suite, agent: AgentLike, options: RunOptions | None = None, *, out: str | Path | None = None,
    resume: bool = False, progress: Callable[[Progress], None] | None = None,
    on_warning: Callable[[str], None] | None = None, cassette: Cassette | None = None,
    redactor: Redactor | None = None, **fields: Any,
) -> Run:
    """Run every case of ``suite`` ``options.trials`` times with ``agent``; returns the finished :class:`Run`.

    ``suite``: a built-in name (``refunds``), a folder of case files, or a loaded ``Suite``. ``agent``: a
    spec or a Python agent (:data:`AgentLike`). ``options``: a :class:`RunOptions` (trials, the cases
    chosen, models, redaction, the agent's sandbox, the executor: each field documents itself), and any of its
    fields as keyword arguments on top (``evaluate("refunds", "careful", trials=8)``); an unknown or bad one
    is refused with the nearest valid name. The options are written into the manifest.

    ``out``: the run folder (default ``runs/SUITE-AGENT-TIMESTAMP``); ``resume`` continues a killed run there
    without repeating a trial, with the options it started with: an option given again must be the same,
    except those of :data:`~passhat.api.options.SESSION_FIELDS` (concurrency, executor, retries…), which may
    change. ``progress`` is called with a :class:`Progress` before the first trial and after each;
    ``on_warning`` with each warning (default: ``warnings.warn`` with :class:`PasshatWarning`).
    ``cassette``: a :class:`~passhat.tools.cassette.Cassette` built by the caller, which answers tools its own
    way (``passhat shadow`` serves production's recorded reads: docs/shadow.md); it excludes
    ``record``/``replay`` and runs on the local executor. ``redactor``: a :class:`~passhat.redaction.Redactor`
    built by the caller, used instead of the one the ``redact*`` options describe (``passhat shadow`` redacts
    the records with the numbering it read production's traces with).

    Bad input raises :class:`passhat.errors.PasshatError` before any trial runs. A gate that cannot be
    evaluated at the end does not raise (the run is on disk): ``run.gate_error`` says why. :func:`evaluate` is
    the same for callers outside an event loop.
    """
    from passhat.agents import check_agent_spec
    from passhat.agents.python import as_agent
    from passhat.api.executors import check_executor, make_executor
    from passhat.api.roles import build_model_setup
    from passhat.runner import RunConfig, execute
    from passhat.runner.preflight import check_preflight
    from passhat.runner.run import check_limits
    from passhat.runner.sanity import noop_passes
    from passhat.suites.plan import plan_run

    if resume and out is None:
        raise PasshatError("resume needs the folder of the run to continue (--out / out=)")
    opts = RunOptions.build(options, **fields).resolved()
    folder = Path(out) if out is not None else None
    old_manifest = RunStore(folder).manifest() if resume and folder is not None else None
    gate_given = "gate" in opts.model_fields_set  # not a run file: whether the caller named a gate file now
    if old_manifest is not None and folder is not None:
        opts = continue_options(old_manifest.options, opts, folder)
    sequenced = None
    if opts.sequential is not None or (old_manifest is not None and old_manifest.sequential is not None):
        from passhat.gate.rounds import plan_sequential  # a sequential run's looks (docs/gates.md)

        asked = "trials" in opts.model_fields_set  # not a run file: the options the caller set
        sequenced = plan_sequential(opts.sequential, old_manifest, gated=opts.gate is not None, executor=opts.executor,
                                    baseline=opts.baseline, trials=opts.trials if asked else None)
        if sequenced is not None and old_manifest is None:
            opts = opts.model_copy(update={"trials": sequenced.design.max_trials})  # its last look
    check_limits(opts.trials, opts.concurrency)  # before anything is loaded; the plan's size once the cases are chosen
    check_executor(opts)
    if cassette is not None and (opts.record is not None or opts.replay is not None or opts.executor != "local"):
        raise PasshatError("cassette= excludes record=/replay= and runs on the local executor only")
    spec = agent if isinstance(agent, str) else None
    if spec is not None:
        check_agent_spec(spec, opts.isolate)
    elif opts.isolate != "none":
        raise PasshatError("isolate='process' needs the agent as a spec ('module:function' or 'path.py:function'), "
                           "which the agent's own process imports; a Python object cannot be sent there")
    if redactor is None:
        redactor = build_redactor(opts.redact, opts.redact_fields, opts.redact_patterns)
    loaded = suite if isinstance(suite, Suite) else load_suite(str(suite))
    plan = plan_run(loaded, cases=opts.cases, splits=opts.splits, tags=opts.tags, frozen=opts.frozen,
                    record=opts.record, replay=opts.replay)
    check_limits(opts.trials, opts.concurrency, len(plan.suite.cases))
    tools_from = cassette if cassette is not None else plan.cassette
    if resume and folder is not None:
        check_same_selection(folder, plan.selection)
    label = spec or opts.name or agent_name(agent)
    python_agent = await _python_agent(spec, opts.isolate) if spec is not None else as_agent(agent, label)
    setup = build_model_setup(label, opts, agent=python_agent)
    registered_gate = None
    if opts.gate is not None or (old_manifest is not None and old_manifest.gate is not None):
        from passhat.gate import registration_for_run  # the gate's model: not on a gateless run's first trial

        # resumed without naming a gate file: the registration the manifest holds, whatever became of the file
        registered_gate = registration_for_run(opts.gate if old_manifest is None or gate_given else None, old_manifest)
    runs_on = make_executor(opts, suite=plan.suite, agent=agent, label=label,
                            cassette=tools_from)  # joins the cluster before any trial
    if folder is None:
        folder = default_out(plan.suite.name, label)

    notes: list[str] = []

    def warn(message: str) -> None:
        notes.append(message)
        if on_warning is not None:
            on_warning(message)
        else:
            warnings.warn(message, PasshatWarning, stacklevel=_caller_stacklevel())

    await check_preflight(plan.suite)  # an environment that cannot run the project's commands is bad input
    noop = await noop_passes(plan.suite) if opts.sanity else None
    if noop:
        warn(f"{len(noop)} case(s) pass with an agent that does nothing: {', '.join(noop)} — "
             "their assertions do not prove the work was done")
    for message in setup.warnings:
        warn(message)
    if setup.judge is None and (unjudged := no_judge_warning(plan.suite)) is not None:
        warn(unjudged)  # fail closed, as graded; said before the trials rather than after them
    extra: dict[str, Any] = {"sanity": {"checked": noop is not None, "noop_passes": noop or []},
                             "isolate": opts.isolate, "options": opts.to_manifest(), **setup.manifest, **plan.manifest}
    if registered_gate is not None:
        extra["gate"] = registered_gate  # written with the manifest, before the first trial
    if sequenced is not None:
        extra["sequential"] = sequenced.record  # its looks too
    cfg = RunConfig(suite=plan.suite, agent=setup.agent, agent_spec=label, trials=opts.trials, seed=opts.seed,
                    concurrency=opts.concurrency, out=folder, user=setup.user, judge=setup.judge, redactor=redactor,
                    cassette=tools_from, extra_manifest=extra)
    total = len(plan.suite.cases) * opts.trials
    done = sum(1 for _ in RunStore(folder).iter_records()) if resume else 0
    if progress is not None:
        progress(Progress(done, total, suite=plan.suite.name, folder=folder))

    unapplied: set[tuple[str, str]] = set()
    planned = {c.id: c.faults for c in plan.suite.cases if c.faults}  # looked up per record: not a scan of the suite
    reported = None if resume else ReportedTally(redactor)  # a resumed run's earlier records are in the file only

    def recorded(rec: TrialRecord) -> None:
        nonlocal done
        done += 1
        if reported is not None:
            reported.add(rec)
        for call in rec.calls:  # a planned fault that changed nothing: the trial did not test it (once per fault)
            if call.fault_not_applied is not None and (rec.case_id, call.fault or "") not in unapplied:
                unapplied.add((rec.case_id, call.fault or ""))
                warn(f"{rec.case_id}: the planned fault {call.fault} did not apply in trial {rec.trial} (step "
                     f"{call.step}): {call.fault_not_applied} — that trial did not test it; each such call is "
                     "flagged fault_not_applied in trials.jsonl")
        if rec.outcome != "error" and rec.case_id in planned:  # an infrastructure error is no trial of the agent's
            for fault, made in not_reached(planned[rec.case_id], rec.calls):
                if (key := (rec.case_id, fault.describe())) not in unapplied:
                    unapplied.add(key)
                    warn(f"{rec.case_id}: the planned fault {key[1]} was never reached in trial {rec.trial}: "
                         f"the agent made {made} call(s) of {fault.tool} — that trial did not test it; the trials "
                         "that never reached it are counted per case in summary.json (faults_not_reached)")
        if progress is not None:
            progress(Progress(done, total, rec, plan.suite.name, folder))

    rounds: dict[str, Any] = {} if sequenced is None else {
        "looks": sequenced.design.looks, "at_look": functools.partial(sequenced.at_look, folder)}
    on_start = None
    if registered_gate is not None:
        from passhat.gate import unreachable_before_run

        def on_start(manifest: Manifest) -> None:
            for line in unreachable_before_run(cfg.out, manifest):
                warn(line)

    busy, before = CpuBound.start(opts.executor), done
    await execute(cfg, resume=resume, on_record=recorded, executor=runs_on, on_start=on_start, **rounds)
    if (note := busy.note(done - before)) is not None:
        warn(note)
    return _finish(folder, by=opts.by, gated=registered_gate is not None, warnings=notes,
                   baseline=opts.baseline if sequenced is None else None, reported=reported)


evaluate = _blocking(evaluate_async)
"""Run a suite k times with an agent and return the finished :class:`Run`: :func:`evaluate_async`'s arguments
and result, for callers outside an event loop (inside one it raises, pointing to ``evaluate_async``)."""


def _finish(folder: Path, *, by: Sequence[str], gated: bool, warnings: list[str], baseline: Path | None = None,
            reported: ReportedTally | None = None) -> Run:
    """After the last trial: ``summary.json`` (from the tallies kept as the records were written, or one pass
    over the tally fields of the records, with the strata asked for and one per tag key, so the report need
    not rebuild it), then the registered gate."""
    from passhat.results import tag_keys
    from passhat.results.summary import summary_of_records_file

    store = RunStore(folder)
    manifest = store.manifest()
    with run_collector():  # the run's setting for its last work too (a full pass here cost 10-40 ms)
        summary = summary_of_records_file(store, manifest, by=list(dict.fromkeys([*by, *tag_keys(manifest)])),
                                          reported=reported)
    store.write_summary(summary)
    gate_result, gate_error = None, None
    if gated:
        from passhat.gate import evaluate_gate, write_gate_result  # only then: it brings compare's code along

        try:
            gate_result = evaluate_gate(folder, None, baseline, source="passhat run")
        except PasshatError as exc:
            gate_error = str(exc)
        else:
            write_gate_result(folder, gate_result)
    return Run(folder, manifest=manifest, summary=summary, gate_result=gate_result, gate_error=gate_error,
               warnings=warnings)


async def _python_agent(spec: str, isolate: str) -> Any:
    """For ``module:function`` and ``path.py:function``: the agent, its module imported off the event loop
    within a time limit (``agents.python.import_agent``), so a module that raises, exits or hangs on import
    is bad input before any trial and the run stays stoppable meanwhile. None for every other spec, which
    :func:`build_model_setup` resolves (and for ``isolate="process"``, whose worker imports it again: the
    import here is the check)."""
    from passhat.agents import is_python_spec
    from passhat.agents.python import as_agent, import_agent

    if not is_python_spec(spec):
        return None
    obj = await import_agent(spec)
    return as_agent(obj, spec) if isolate == "none" else None

