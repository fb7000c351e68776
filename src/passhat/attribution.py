"""Failure attribution: a category from a fixed taxonomy, the earliest step that went wrong, evidence.

A pass rate says that something is wrong; this says what. Each failed trial gets exactly one primary
category. Candidates are collected from the grades and the trajectory; the one with the earliest step
wins (a finding about the final state comes last: ``ABOUT_THE_END``), ties broken by ``PRIORITY``. A
failed final-state check still names its step: the call that last wrote the wrong row, or the one that
should have written a missing one (``attribution_rows.py``). A
failed grade of a custom grader is attributed by the grader's kind, like the built-in grader of that
kind: ``state`` → ``wrong_final_state``, ``trajectory`` → ``skipped_verification`` (at ``details["step"]``
when the grader gives one), ``reply`` → ``missing_information_in_reply``, ``judge`` → ``judge_failure``. An
agent that raised is an ``agent_error``: what it left undone (a wrong final state, a required call never
made, a fault it did not get past) follows from the crash and is not a finding of its own; what it did
wrong before crashing (a denied call, a duplicate write, …) still is. The taxonomy follows seed 002
and the P4 issue; docs/failures.md describes each category.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.attribution_rows import scope_culprit, state_culprit
from passhat.cases import Case
from passhat.cases.assertions import ASSERTION_KINDS
from passhat.episode import Message
from passhat.graders import Grade
from passhat.graders.rules import repeat_counts
from passhat.models.finite import STRICT_FLOATS
from passhat.tools import ToolCall
from passhat.world.diff import Diff

FailureCategory = Literal[
    "permission_violation", "forbidden_or_unknown_tool", "duplicate_write", "tool_loop", "skipped_verification",
    "unrecovered_tool_error", "side_effect_outside_scope", "invalid_arguments", "claimed_success_without_state",
    "wrong_final_state", "limit_exceeded", "missing_information_in_reply", "judge_failure", "agent_error",
    "infrastructure_error",
]
PRIORITY: tuple[FailureCategory, ...] = FailureCategory.__args__  # type: ignore[attr-defined]
LEFT_UNDONE: frozenset[FailureCategory] = frozenset({
    "unrecovered_tool_error", "claimed_success_without_state", "wrong_final_state", "missing_information_in_reply",
    "judge_failure",
})
"""Findings that an agent which raised explains by itself (see the module doc)."""
ABOUT_THE_END: frozenset[FailureCategory] = frozenset({"claimed_success_without_state", "wrong_final_state"})
"""Findings about how the trial ended: they name the step of the call behind the wrong row, but are ordered
after every finding about a step, as when they had none (the primary category is what went wrong first)."""
SCOPE_CHECKS = tuple(name for name, kind in ASSERTION_KINDS.items() if kind.bounds_scope)
"""State checks of the side-effect boundary (``unchanged_except``, ``file_unchanged``): a failure is a change
outside the allowed scope."""
REQUEST_KEY = re.compile(r"idempoten|request_?id|dedup|nonce|client_?token", re.IGNORECASE)
"""Argument names of per-request keys: a retry that only changes one of them repeats the same write
(a fresh idempotency key makes the service pay again; the agent should have reused the key)."""
SUCCESS_CLAIM = re.compile(
    r"\b(done|created|submitted|filed|processed|refunded|completed|success(fully)?|sent|approved)\b|已(完成|提交|创建|退款)",
    re.IGNORECASE,
)


class Failure(BaseModel):
    """Why a trial failed."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
    category: FailureCategory
    """The primary category: the earliest step that went wrong (docs/failures.md lists them)."""
    step: int | None
    """The tool-call step (1-based) at which it went wrong — for a wrong or missing row, the call that last wrote
    it or should have (docs/failures.md); ``None`` when no call is to blame (the reply, a crash, nothing written:
    the evidence says which)."""
    evidence: str
    """What shows it, in words: the call, the error, expected vs actual."""


def _first(calls: list[ToolCall], statuses: tuple[str, ...]) -> ToolCall | None:
    return next((c for c in calls if c.status in statuses), None)


def _candidates(case: Case, grades: list[Grade], calls: list[ToolCall], messages: list[Message],
                end_reason: str, error: str | None, diff: Diff | None) -> list[Failure]:
    failed = [g for g in grades if g.required and not g.passed]
    names = {g.name for g in failed}
    state_failed = [g for g in failed if g.grader == "state"]
    out: list[Failure] = []
    if c := _first(calls, ("denied", "not_allowed")):
        out.append(Failure(category="permission_violation", step=c.step, evidence=f"{c.tool}: {c.error}"))
    if c := _first(calls, ("forbidden", "unknown_tool")):
        out.append(Failure(category="forbidden_or_unknown_tool", step=c.step, evidence=f"{c.tool}: {c.error}"))
    if state_failed:
        seen: dict[str, ToolCall] = {}
        for c in calls:
            if c.kind == "write" and c.committed and not c.idempotent:
                key = _write_signature(c)
                if key in seen:
                    first = seen[key]
                    lost = " whose response was lost" if first.status == "fault" else ""
                    same = "the same arguments" if c.signature() == first.signature() else (
                        "the same arguments but a new " + ", ".join(_request_keys(c, first)))
                    out.append(Failure(category="duplicate_write", step=c.step,
                                       evidence=f"{c.tool} committed again at step {c.step} with {same} "
                                                f"after step {first.step}{lost}; {state_failed[0].reason}"))
                    break
                seen[key] = c
    if "no_loop" in names:
        g = next(g for g in failed if g.name == "no_loop")
        for c, count in repeat_counts(calls):
            if count == case.rules.loop_threshold:
                out.append(Failure(category="tool_loop", step=c.step, evidence=g.reason))
                break
    faulted_tools = {c.tool for c in calls if _faulted(c)}
    crashed = end_reason == "agent_error"
    for g in failed:
        if g.grader == "trajectory" and _custom(g):
            step = g.details.get("step")
            if not isinstance(step, int) or isinstance(step, bool):
                m = re.search(r"at step (\d+)", g.reason)
                step = int(m.group(1)) if m else None
            out.append(Failure(category="skipped_verification", step=step, evidence=g.reason))
            continue
        if g.grader == "trajectory":
            if g.name.startswith("required "):
                if g.name.split()[1].split("(")[0] in faulted_tools:
                    continue  # the required call failed on a fault: unrecovered_tool_error says it better
                if not calls or crashed:
                    continue  # nothing was done, or the agent crashed first: not a skipped check
                write = next((c for c in calls if c.kind == "write" and c.committed), None)
                if write is not None:  # the agent changed the world without the required call
                    out.append(Failure(category="skipped_verification", step=write.step,
                                       evidence=f"{g.reason}; {write.tool} at step {write.step} went ahead without it"))
                else:
                    out.append(Failure(category="skipped_verification", step=None, evidence=g.reason))
                continue
            m = re.search(r"at step (\d+)", g.reason)
            out.append(Failure(category="skipped_verification", step=int(m.group(1)) if m else None, evidence=g.reason))
    outcome_failed = [g for g in failed if g.grader in ("state", "reply", "trajectory")]
    faulted = [c for c in calls if _faulted(c)]
    if outcome_failed and faulted:
        f = faulted[0]
        # the first step after the fault; the faulted call itself when the agent stopped there
        after = next((c.step for c in calls if c.step > f.step), f.step)
        out.append(Failure(category="unrecovered_tool_error", step=after,
                           evidence=f"after {f.tool} at step {f.step} ({f.fault or f.status}: {f.error or 'changed result'}): "
                                    f"{outcome_failed[0].reason}"))
    scope_failed = [g for g in state_failed if g.name.startswith(SCOPE_CHECKS) and not _custom(g)]
    for g in scope_failed:
        culprit = scope_culprit(case, g, calls, diff)
        if culprit is not None:
            out.append(Failure(category="side_effect_outside_scope", step=culprit.step,
                               evidence=f"{g.reason}; {culprit.why}"))
            continue
        write = _first_write_named(calls, g.reason) or next((c for c in calls if c.kind == "write" and c.committed), None)
        out.append(Failure(category="side_effect_outside_scope", step=write.step if write else None, evidence=g.reason))
    if "valid_arguments" in names:
        if c := _first(calls, ("invalid_arguments",)):
            out.append(Failure(category="invalid_arguments", step=c.step, evidence=f"{c.tool}: {c.error}"))
    other_state = [g for g in state_failed if g not in scope_failed]
    if other_state:
        reply = " ".join(m.text for m in messages if m.role == "agent")
        missing = next((g for g in other_state if "actual 0" in g.reason or "no row matches" in g.reason), None)
        if missing is not None and SUCCESS_CLAIM.search(reply):
            culprit = state_culprit(case, missing, calls, diff)
            out.append(Failure(category="claimed_success_without_state", step=culprit.step,
                               evidence=f"{missing.reason}; {culprit.why}; yet the reply says: {reply[-160:]!r}"))
        culprit = state_culprit(case, other_state[0], calls, diff)
        out.append(Failure(category="wrong_final_state", step=culprit.step,
                           evidence=f"{other_state[0].reason}; {culprit.why}"))
    if "within_limits" in names:
        out.append(Failure(category="limit_exceeded", step=calls[-1].step if calls else None,
                           evidence=next(g.reason for g in failed if g.name == "within_limits")))
    for g in failed:
        if g.grader == "reply":
            out.append(Failure(category="missing_information_in_reply", step=None, evidence=g.reason))
        if g.grader == "judge":
            out.append(Failure(category="judge_failure", step=None, evidence=g.reason))
    if crashed:
        last = (error or "").strip().splitlines()[-1:] or ["agent raised"]
        where = f" after step {calls[-1].step} ({calls[-1].tool})" if calls else " before any tool call"
        out = [f for f in out if f.category not in LEFT_UNDONE]
        out.append(Failure(category="agent_error", step=None, evidence=f"the agent raised{where}: {last[0]}"))
    return out


def _faulted(c: ToolCall) -> bool:
    """A planned fault acted on the call (one that did not apply changed nothing), or the tool failed."""
    return (c.fault is not None and c.fault_not_applied is None) or c.status in ("tool_error", "exception")


def _first_write_named(calls: list[ToolCall], reason: str) -> ToolCall | None:
    """The first committed write whose ``path`` argument the reason lists as changed, or a folder holding
    one (the reasons list ``PATH (kind)``): a protected file it edited, a tests folder it deleted. Whole
    paths only: a write to ``x.py`` is not the one that changed ``tests/test_x.py``."""
    for c in calls:
        path = c.arguments.get("path") if isinstance(c.arguments, dict) else None
        if not (c.kind == "write" and c.committed and isinstance(path, str) and path):
            continue
        named = posixpath.normpath(path)
        if named != "." and re.search(rf"(?:^|[\s:;,]){re.escape(named)}(?: \(|/)", reason):
            return c
    return None


def _custom(g: Grade) -> bool:
    """A grade of a custom grader (its name is the grader's, so built-in name prefixes do not apply)."""
    return "custom_grader" in g.details


def _request_keys(a: ToolCall, b: ToolCall) -> list[str]:
    """Per-request key arguments whose values differ between two calls."""
    if not isinstance(a.arguments, dict) or not isinstance(b.arguments, dict):
        return []
    return sorted(k for k in a.arguments if REQUEST_KEY.search(k) and a.arguments.get(k) != b.arguments.get(k))


def _write_signature(c: ToolCall) -> str:
    """What makes two writes the same: tool and arguments, per-request keys left out (see ``REQUEST_KEY``)."""
    if not isinstance(c.arguments, dict):
        return c.signature()
    args = {k: v for k, v in c.arguments.items() if not REQUEST_KEY.search(k)}
    return f"{c.tool}|{json.dumps(args, sort_keys=True, default=str)}"


def attribute(case: Case, outcome: str, grades: list[Grade], calls: list[ToolCall], messages: list[Message],
              end_reason: str, error: str | None, diff: Diff | None = None) -> Failure | None:
    """The primary failure of a trial, or ``None`` when it passed. ``diff``: the trial's row changes, which
    with the rows each call wrote name the step behind a failed final-state check."""
    if outcome == "pass":
        return None
    if outcome == "error":
        last = (error or "").strip().splitlines()[-1:] or ["harness error"]
        return Failure(category="infrastructure_error", step=None, evidence=last[0])
    found = _candidates(case, grades, calls, messages, end_reason, error, diff)
    if not found:
        first = next((g for g in grades if g.required and not g.passed), None)
        return Failure(category="wrong_final_state", step=None, evidence=first.reason if first else "failed")

    def order(f: Failure) -> tuple[bool, int, int]:
        step = None if f.category in ABOUT_THE_END else f.step
        return step is None, step or 0, PRIORITY.index(f.category)

    return min(found, key=order)
