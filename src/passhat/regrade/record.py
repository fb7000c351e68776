"""Re-grading one stored trial: its trajectory and rebuilt final state, the current case and graders.

Nothing here can reach an agent: a record already holds the calls, messages, reply and row diff, and the
final state is rebuilt from the fixture plus that diff (each part of the world by its kind:
``WorldImage.rebuild``), so SQL assertions see the state the agent left. Custom graders run again like
the built-in ones (the current domain's code). Model-based grades (the ``judge:`` rubric and custom
judge graders) need a model, so they are carried over from the record; a custom judge assertion the
record has no grade for fails closed. Trials the harness could not run or could not evaluate (outcome
``error``, including stale cassettes) are kept as they are: there is nothing faithful to re-grade.

A stored diff is redacted the way the run redacted its records (e-mail addresses, phone numbers), while
the reference's diff (``expect_state: reference``) is recomputed here from the fixture. Both sides of that
comparison go through the same redaction, so an unchanged trial compares as it did: a recomputed
``noah@example.com`` against the stored ``[REDACTED:email]`` would be a difference redaction made up.
Redaction can still decide a check the run decided otherwise: a reply ``327 1000 1786`` is stored as
``[REDACTED:phone]`` and no longer contains ``327``; two different e-mail addresses both read
``[REDACTED:email]``. So when the case and its domain are unchanged since the run and the record holds a
placeholder, a grade that disagrees with the run's grade for the same assertion keeps the run's (which
saw the values), marked ``details.kept_because_redacted`` — but only a grade that visibly read redacted
text: its reason quotes a placeholder, or it is a reply check and the replies hold one. Any other
disagreement (a grader that changed with passhat, say) is the regrade's to report. A changed case is
decided on the redacted record alone.
"""

from __future__ import annotations

from passhat.attribution import attribute
from passhat.cases import Case
from passhat.cases.expected import expected_state
from passhat.domain import Domain
from passhat.graders import DEFAULT_GRADERS, Grade, Grader, TrialView, grade_all, trial_passed
from passhat.graders.custom import carried_judge_grade
from passhat.graders.files import run_commands_blocking
from passhat.graders.judge import judge_assertions
from passhat.redaction import NO_REDACTION, PLACEHOLDER_PREFIX, Redactor
from passhat.runner.records import TrialRecord
from passhat.workspace.errors import WorkspaceError
from passhat.workspace.tree import FileDiff
from passhat.world.diff import Diff
from passhat.world.replay import ReplayError


def _unrebuildable(record: TrialRecord, case: Case, exc: Exception) -> TrialRecord:
    # a workspace error says its own cause (content not kept, redacted, or a fixture file that changed)
    why = "" if isinstance(exc, WorkspaceError) else " (the fixture or schema changed since the run)"
    error = f"cannot rebuild the final state for re-grading{why}: {exc}"
    return record.model_copy(update={
        "outcome": "error", "error": error,
        "failure": attribute(case, "error", [], record.calls, record.messages, record.end_reason, error)})


def _redacted(expected: Diff | None, redactor: Redactor) -> Diff | None:
    """The reference's diff as the run would have stored it (the trial's diff was stored redacted)."""
    if expected is None or not redactor.enabled:
        return expected
    return Diff.from_json(redactor.value(expected.to_json()))


def regrade_record(record: TrialRecord, case: Case, domain: Domain,
                   graders: tuple[Grader, ...] = DEFAULT_GRADERS, redactor: Redactor = NO_REDACTION,
                   unchanged: bool = False) -> TrialRecord:
    """The record with grades, outcome and failure recomputed for ``case`` (a copy; the input is untouched).

    LLM-judge grades cannot be recomputed without a model: the rubric's are carried over unchanged when the
    case still has a ``judge:`` section, and dropped when it no longer has one; a custom judge grader's
    grade is carried over when the record has one for the same assertion (same grader and parameters),
    and fails closed when it has none. ``redactor`` is the one the run stored its records with: it is
    applied to the recomputed reference diff, as it was to the stored one. ``unchanged``: the case and its
    domain hash as they did in the run (then redaction cannot change a verdict: module docstring).
    """
    if record.outcome == "error":
        return record.model_copy()
    diff = Diff.from_json(record.diff)
    files = FileDiff.from_json(record.files) if record.files is not None else None
    try:  # every part of the fixture's world, rebuilt by its kind from the recorded diffs
        world = domain.rebuild_world(case.fixture, diff, files, record.seed)
    except (ReplayError, WorkspaceError) as exc:
        return _unrebuildable(record, case, exc)
    try:
        state = world.final_state_now(diff, files)
        root = state.workspace
        view = TrialView(case=case, calls=record.calls, messages=record.messages, diff=diff,
                         end_reason=record.end_reason, usage=record.usage, agent_seconds=record.timing.agent_s,
                         query=state.query, error=record.error, graders=domain.graders,
                         expected=_redacted(expected_state(case, domain), redactor),
                         files=files, workspace=root, tables=state.tables,
                         commands=run_commands_blocking(case, root, domain.command_env) if root is not None else {})
        grades = grade_all(view, graders)
    finally:
        world.close()
    if case.judge is not None:
        grades += [g for g in record.grades if g.grader == "judge" and "custom_grader" not in g.details]
    stored: list[Grade] = [g for g in record.grades if g.grader == "judge" and "custom_grader" in g.details]
    grades += [carried_judge_grade(a, stored) for a, _ in judge_assertions(view)]
    if unchanged and redactor.enabled:
        replies = record.model_dump_json(include={"reply", "messages"})
        grades = _keep_where_redacted(grades, record.grades, replies_redacted=PLACEHOLDER_PREFIX in replies)
    outcome = "pass" if trial_passed(grades) else "fail"
    failure = attribute(case, outcome, grades, record.calls, record.messages, record.end_reason, record.error, diff)
    return record.model_copy(update={"grades": grades, "outcome": outcome, "failure": failure})


def _keep_where_redacted(grades: list[Grade], stored: list[Grade], *, replies_redacted: bool) -> list[Grade]:
    """Each grade, or the run's grade of the same assertion where the two disagree and the new one read
    redacted text (see the module docstring)."""
    before = {(g.grader, g.name): g for g in stored}
    out = []
    for g in grades:
        old = before.get((g.grader, g.name))
        saw_redacted = PLACEHOLDER_PREFIX in g.reason or (g.grader == "reply" and replies_redacted)
        if old is not None and old.passed != g.passed and saw_redacted:
            g = old.model_copy(update={"details": {**old.details, "kept_because_redacted": True}})
        out.append(g)
    return out
