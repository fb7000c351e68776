"""One trial: reset the world, let the agent act through the episode, diff, grade.

Agent failures (exceptions, hangs, budgets) are the agent's: the trial is graded and fails. Failures of
the harness or the world are infrastructure: the trial's outcome is ``error`` and the runner retries.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from passhat import outages
from passhat.agents.protocol import Agent
from passhat.attribution import attribute
from passhat.cases import Case
from passhat.cases.expected import expected_state
from passhat.domain import Domain
from passhat.episode import EndReason, Episode, LimitExceeded, UserSimulator
from passhat.errors import AgentCrashed, InfrastructureError
from passhat.graders import DEFAULT_GRADERS, Grader, TrialView, grade_all, trial_passed
from passhat.graders.files import run_commands
from passhat.graders.judge import Judge, judge_trial, needs_judge
from passhat.runner.in_task import InContext
from passhat.runner.records import Outcome, Timing, TrialRecord
from passhat.runner.turns import turns
from passhat.runner.watchdog import CURRENT_WATCHDOG, TrialSlot
from passhat.seeding import derive_seed
from passhat.tools import ToolBoundary, ToolContext
from passhat.tools.cassette import Cassette
from passhat.tracing import build_spans, trace_id
from passhat.users import ScriptedUser

if TYPE_CHECKING:
    from passhat.upstream.session import TrialUpstreams
    from passhat.world import World

UserFactory = Callable[[Case, int, ToolBoundary], UserSimulator]
"""Makes the user simulator of one trial from the case, the user's seed and the tool boundary (so a
model-played user can see whether the agent's write has happened). Default: the scripted user."""


async def _guarded(agent: Agent, episode: Episode, ended: list[float]) -> str | None:
    """The agent's coroutine with everything it raises made the agent's failure, ``BaseException``
    subclasses included (``SystemExit``, ``KeyboardInterrupt``, a class of the agent's own): raised inside
    a task, they stop the event loop — the whole run. Only a real cancellation (the time limit, Ctrl-C,
    whose signal handler cancels the run's task) propagates; a ``CancelledError`` the agent raises on its
    own is its failure too. ``ended`` receives the moment the agent's code gave up control for good,
    taken here, not when the runner next looks (docs/design/022)."""
    try:
        return await agent(episode)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        raise AgentCrashed(f"the agent raised CancelledError itself (nothing cancelled it)\n{traceback.format_exc()}") from None
    except Exception:
        raise
    except BaseException as exc:
        raise AgentCrashed(f"the agent raised {exc!r}\n{traceback.format_exc()}") from None
    finally:
        ended.append(time.monotonic())


def _watch_agent(task: asyncio.Task[Any], episode: Episode, seconds: float) -> TrialSlot | None:
    """Tag the trial's task, while its agent runs in it, for the run's loop watchdog, if one watches
    (runner/watchdog.py); :func:`_unwatch_agent` takes the tag off when the agent ends."""
    dog = CURRENT_WATCHDOG.get()
    deadline = episode.deadline
    if dog is None or deadline is None:
        return None
    slot = TrialSlot(case_id=episode.case_id, trial=episode.trial, limit_s=seconds, deadline=deadline, episode=episode)
    dog.enter(task, slot)
    return slot


def _unwatch_agent(task: asyncio.Task[Any], slot: TrialSlot | None) -> None:
    """The agent has ended: what the trial's task runs next is the harness's code, not the agent's."""
    dog = CURRENT_WATCHDOG.get()
    if dog is not None and slot is not None:
        dog.leave(task, slot)


@dataclass
class _Stop:
    """The runner's reasons to cancel the trial's task while its agent runs in it: the time limit (its timer)
    and an outage declared on the trial's watch (the declared future's callback)."""

    task: asyncio.Task[Any]
    watch: outages.TrialWatch
    baseline: int
    """``task.cancelling()`` when the agent started: a count above it once ours is taken back is someone
    else's (the run's cancellation: Ctrl-C, a failed writer)."""
    active: bool = True
    fired: bool = False
    blame: str | None = None
    """The provider's part in the time spent, judged when it fired, before the cancellation unwinds the calls."""

    def __call__(self, *_: object) -> None:
        if not self.active or self.fired:  # a callback scheduled before the agent ended comes too late
            return
        self.fired = True
        self.blame = self.watch.blame()
        self.task.cancel()

    def end(self) -> bool:
        """The agent has ended: fire no more, take back our cancellation, and say whether another one was asked
        for meanwhile (the agent may have kept it to itself by catching it)."""
        self.active = False
        if self.fired:
            self.task.uncancel()
        return self.task.cancelling() > self.baseline


def _over_limit(seconds: float, ended: float, slot: TrialSlot | None, started: float, *, cancelled: bool) -> str:
    """Why a trial whose agent ended after its deadline is ``time_limit``, or an ``InfrastructureError``
    when another trial's agent (or the harness) held the event loop meanwhile: the time was not its own."""
    dog = CURRENT_WATCHDOG.get()
    if dog is not None and slot is not None:
        other = dog.lost_to_others(slot, started)
        if other is not None:
            who = f"trial {other.culprit.label()}'s agent" if other.culprit is not None else "the harness"
            raise InfrastructureError(f"time limit of {seconds:g}s reached while {who} held the event loop for "
                                      f"{other.end - other.start:.1f}s: this trial could not run its time")
        held = dog.held_by(slot, started)
        if held > 0:
            return (f"time limit: the agent held the event loop for {held:.1f}s without awaiting and ended after "
                    f"{ended - started:.1f}s, past its {seconds:g}s limit (an in-process agent that never awaits "
                    "blocks every trial: run it with --isolate process)")
    if cancelled:
        return f"time limit: the agent did not finish within {seconds:g}s"
    return f"time limit: the agent ended after {ended - started:.1f}s, past its {seconds:g}s limit"


async def _within_limit(agent: Agent, episode: Episode, seconds: float) -> str | None:
    """The agent's reply, or :class:`TimeoutError` at the time limit — unless the time went to a failing
    or stalled model provider, which makes the trial an infrastructure error (passhat/outages.py). An
    outage declared on the trial's watch (the model relay saw the agent's provider stall) ends the trial
    at once as that error, whatever the agent returns; so does an agent that ends while the relay's last
    attempt at its provider got no answer (refused, 5xx). An agent that ended after its limit (it blocked the
    event loop, so no timer could fire) is over its limit too, whatever it returned or raised.

    The agent runs in this task (runner/in_task.py, docs/design/032): the limit and a declared outage cancel
    the task, and are told apart from the run's own cancellation, which always propagates."""
    ended: list[float] = []
    started = time.monotonic()
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("a trial's agent is run from an asyncio task")
    reply: str | None = None
    raised: BaseException | None = None
    with outages.watching(episode.deadline) as watch:
        context = contextvars.copy_context()  # taken inside: the agent sees the watch, as a task made here would
        stop = _Stop(task, watch, task.cancelling())
        timer = asyncio.get_running_loop().call_later(seconds, stop)
        declared = watch.declared()
        declared.add_done_callback(stop)
        slot = _watch_agent(task, episode, seconds)
        running = InContext(_guarded(agent, episode, ended), context)
        try:
            reply = await running
        except BaseException as exc:  # the agent's failure or a cancellation: which, is decided below
            raised = exc
        finally:
            timer.cancel()
            declared.remove_done_callback(stop)
            _unwatch_agent(task, slot)
            run_cancelled = stop.end()
        if run_cancelled:  # the run is being cancelled: that wins, whatever the agent did with it
            raise raised if isinstance(raised, asyncio.CancelledError) else asyncio.CancelledError()
    if not running.suspended:  # it never waited: give the other trials, the writer and the watchdog's beat a turn
        await asyncio.sleep(0)
    cancelled = isinstance(raised, asyncio.CancelledError)  # by the limit or an outage: the run's is raised above
    if watch.outage is not None:  # what the agent made of the outage is moot
        raise InfrastructureError(watch.outage)
    if stop.blame is not None:
        raise InfrastructureError(f"time limit of {seconds:g}s reached while {stop.blame}")
    failing = None if cancelled else watch.blame()  # only the model relay's failing calls outlive the agent
    if failing is not None:  # what it returned or raised came of the outage
        raise InfrastructureError(f"the agent ended while {failing} (no answer since)")
    if stop.fired or (ended and ended[0] > started + seconds):  # stopped at its limit, or ended past it
        raise TimeoutError(_over_limit(seconds, ended[0] if ended else time.monotonic(), slot, started,
                                       cancelled=cancelled))
    if raised is not None:
        raise raised
    return reply


async def _drive(agent: Agent, episode: Episode, seconds: float) -> tuple[EndReason, str | None]:
    """Run the agent under the time limit; returns how it ended and the traceback if it raised."""
    try:
        reply = await _within_limit(agent, episode, seconds)
    except TimeoutError as exc:
        return "time_limit", str(exc) or f"time limit: the agent did not finish within {seconds:g}s"
    except LimitExceeded as exc:
        return exc.reason, str(exc)
    except InfrastructureError:  # a provider kept failing: not the agent's fault, the runner records `error`
        raise
    except AgentCrashed as exc:  # seen from outside (exit status, bad answer): the message is the evidence
        return "agent_error", str(exc)
    except Exception:
        if episode.limit is not None:  # the agent caught LimitExceeded and raised something else
            return episode.limit.reason, str(episode.limit)
        return "agent_error", traceback.format_exc()
    if isinstance(reply, str) and reply:
        episode.finish(reply)
    if episode.limit is not None:
        return episode.limit.reason, str(episode.limit)
    if episode.ended_by is not None:
        return "ended_by_tool", None
    return ("user_stopped" if episode.user_left else "completed"), None


async def run_trial(
    case: Case,
    domain: Domain,
    agent: Agent,
    trial: int,
    seed: int,
    graders: tuple[Grader, ...] = DEFAULT_GRADERS,
    *,
    user: UserFactory | None = None,
    judge: Judge | None = None,
    cassette: Cassette | None = None,
) -> TrialRecord:
    """Run and grade one trial. Raises only on infrastructure failure (the caller records ``error``)."""
    started_at = datetime.now(UTC).isoformat()
    t_start = time.perf_counter()
    # every part of the fixture's world (docs/design/019); kinds that block (file copies, a database to
    # clone) are opened off the event loop, so other trials' agents keep running
    world = await domain.open_world(case.fixture, seed)
    reset_ms = (time.perf_counter() - t_start) * 1000
    commands_s = judge_s = 0.0  # the Timing is made whole at the end: setting a model's fields costs ~3.5 K instructions each
    upstreams: TrialUpstreams | None = None
    try:
        t0 = time.monotonic()
        ctx = ToolContext(world, identity=case.user.identity, facts=dict(case.user.facts))
        session = cassette.session(case.id, trial) if cassette is not None else None  # external tools
        tools = session.wrap(domain.tool_list()) if session is not None else domain.tool_list()
        upstreams = start_upstreams(domain, world, case.user.identity, seed)
        tools = upstreams.bind(tools) if upstreams is not None else tools
        boundary = ToolBoundary(tools, ctx, allowed=case.allowed_tools, forbidden=case.forbidden_tools,
                                faults=case.faults, t0=t0, user_tools=domain.user_tools.values())
        simulator = ScriptedUser(case.user) if user is None else user(case, derive_seed("user", seed), boundary)
        episode = Episode(
            case_id=case.id, domain=domain.name, trial=trial, seed=derive_seed("agent", seed),
            instruction=case.instruction, policy=domain.policy, identity=case.user.identity,
            boundary=boundary, user=simulator, max_steps=case.limits.max_steps,
            max_cost=case.limits.max_cost, t0=t0, time_limit_s=case.limits.max_seconds, tags=case.tags,
            max_tool_errors=case.limits.max_tool_errors,
        )
        t_agent = time.perf_counter()
        end_reason, error = await _drive(agent, episode, case.limits.max_seconds)
        agent_s = time.perf_counter() - t_agent
        if upstreams is not None:  # stopped before the diff: a server may hold the trial's database open
            await upstreams.close()

        await turns().take()  # one trial's post-agent work per loop iteration (runner/turns.py)
        t_diff = time.perf_counter()
        state = await world.final_state()  # the row diff and the file diff, whatever kinds hold them
        diff, files = state.diff, state.files
        diff_ms = (time.perf_counter() - t_diff) * 1000
        commands = {}
        if state.workspace is not None:  # the project's own checks: after the diff, so their writes are not the agent's
            t_commands = time.perf_counter()
            commands = await run_commands(case, state.workspace, world.command_env)
            commands_s = time.perf_counter() - t_commands

        t_grade = time.perf_counter()
        view = TrialView(case=case, calls=boundary.calls, messages=episode.messages, diff=diff,
                         end_reason=end_reason, usage=episode.usage, agent_seconds=agent_s,
                         query=state.query, error=error, graders=domain.graders,
                         expected=expected_state(case, domain), files=files,
                         workspace=state.workspace, commands=commands, tables=state.tables)
        grades = grade_all(view, graders)
        grade_ms = (time.perf_counter() - t_grade) * 1000
        judged = None
        if needs_judge(view):  # model calls: timed apart from the harness's own grading overhead
            t_judge = time.perf_counter()
            judged = await judge_trial(view, judge, policy=domain.policy, seed=derive_seed("judge", seed))
            grades += judged.grades
            judge_s = time.perf_counter() - t_judge
    finally:
        try:
            if upstreams is not None and not upstreams.logs:  # the agent's part raised: stop the servers all the same
                await upstreams.close()
        finally:
            await world.aclose()  # every part discarded (blocking ones off the event loop, as they were made)
    timing = Timing(started_at=started_at, total_s=time.perf_counter() - t_start, agent_s=agent_s, reset_ms=reset_ms,
                    diff_ms=diff_ms, grade_ms=grade_ms, judge_s=judge_s, commands_s=commands_s)
    outcome: Outcome = "pass" if trial_passed(grades) else "fail"
    if session is not None:
        session.close()
        if session.problems:  # a stale recording is infrastructure, not the agent's failure (tools/cassette.py)
            outcome, error = "error", session.error_text()
    if upstreams is not None and upstreams.start_failure() is not None:  # the team's server, not the agent
        outcome, error = "error", upstreams.start_failure()
    calls = boundary.calls
    spans = build_spans(seed=seed, case_id=case.id, calls=calls, messages=episode.messages,
                        model_calls=episode.model_calls, agent_s=agent_s, grade_s=grade_ms / 1000,
                        end_reason=end_reason, error=error,
                        attributes={"passhat.trial": trial, "passhat.domain": domain.name,
                                    "passhat.tool_schema_hash": domain.tool_schema_hash(),
                                    "passhat.models": ", ".join(episode.usage.models) or None})
    return TrialRecord(
        case_id=case.id, trial=trial, seed=seed, outcome=outcome, end_reason=end_reason, grades=grades,
        calls=calls, messages=episode.messages, reply=episode.reply, diff=diff.to_json(), usage=episode.usage,
        files=files.to_json() if files is not None else None,
        model_calls=episode.model_calls, timing=timing, error=error,
        user_usage=getattr(simulator, "usage", None), judge_usage=judged.usage if judged else None,
        failure=attribute(case, outcome, grades, calls, episode.messages, end_reason, error, diff),
        trace_id=trace_id(seed), spans=spans, replayed=session is not None and session.replayed,
        upstreams=upstreams.logs if upstreams is not None else None,
        isolation=episode.isolation or {"kind": "none", "details": "ran in passhat's process, or not started by passhat"},
    )


def start_upstreams(domain: Domain, world: World, identity: str | None, seed: int) -> TrialUpstreams | None:
    """The trial's upstream MCP servers, begun in the background on its world (``None`` without any)."""
    if not domain.upstreams:
        return None
    from passhat.upstream.listing import server_folder
    from passhat.upstream.session import TrialUpstreams

    upstreams = TrialUpstreams(domain.upstreams, world, identity=identity, seed=seed, cwd=server_folder(domain))
    upstreams.begin()
    return upstreams


def error_record(case: Case, trial: int, seed: int, attempt: int, started: float, exc: BaseException) -> TrialRecord:
    """The record of a trial the harness could not run (outcome ``error``): what failed outside the agent
    (a provider, a service, a port) in its own words, or the traceback of a harness bug."""
    error = f"{type(exc).__name__}: {exc}" if isinstance(exc, InfrastructureError) else traceback.format_exc()
    return TrialRecord(
        case_id=case.id, trial=trial, seed=seed, outcome="error", end_reason="harness_error",
        attempt=attempt, error=error, failure=attribute(case, "error", [], [], [], "harness_error", error),
        timing=Timing(started_at=datetime.now(UTC).isoformat(), total_s=time.perf_counter() - started),
    )


def blocked_record(case: Case, slot: TrialSlot, seed: int, why: str) -> TrialRecord:
    """The record of a trial the loop's watchdog gave up on (its agent never gave the event loop back):
    ``fail`` / ``time_limit`` with what its episode holds so far. No world diff can be taken and nothing is
    graded: the world belongs to the blocked loop. Built on the watchdog's thread, in the run's process or
    in a Ray worker's (which sends it to the driver)."""
    episode = slot.episode
    calls = list(episode.calls) if episode is not None else []
    messages = list(episode.messages) if episode is not None else []
    error = f"time limit: {why}"
    return TrialRecord(
        case_id=case.id, trial=slot.trial, seed=seed, outcome="fail", end_reason="time_limit", calls=calls,
        messages=messages, error=error, failure=attribute(case, "fail", [], calls, messages, "time_limit", error),
        timing=Timing(started_at=datetime.now(UTC).isoformat(), agent_s=time.monotonic() - slot.deadline + slot.limit_s),
    )
