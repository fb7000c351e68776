"""Failure attribution: a category from a fixed taxonomy, the earliest step that went wrong, evidence.

A pass rate says that something is wrong; this says what. Each failed trial gets exactly one primary
category. Candidates are collected from the grades and the trajectory; the one with the earliest step
wins (a finding about the final state has no step and comes last), ties broken by ``PRIORITY``. The
taxonomy follows seed 002 and the P4 issue; docs/failures.md describes each category.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from passhat.cases import Case
from passhat.episode import Message
from passhat.graders import Grade
from passhat.tools import ToolCall

FailureCategory = Literal[
    "permission_violation", "forbidden_or_unknown_tool", "duplicate_write", "tool_loop", "skipped_verification",
    "unrecovered_tool_error", "side_effect_outside_scope", "invalid_arguments", "claimed_success_without_state",
    "wrong_final_state", "limit_exceeded", "missing_information_in_reply", "judge_failure", "agent_error",
    "infrastructure_error",
]
PRIORITY: tuple[FailureCategory, ...] = FailureCategory.__args__  # type: ignore[attr-defined]
SUCCESS_CLAIM = re.compile(
    r"\b(done|created|submitted|filed|processed|refunded|completed|success(fully)?|sent|approved)\b|已(完成|提交|创建|退款)",
    re.IGNORECASE,
)


class Failure(BaseModel):
    """Why a trial failed."""

    category: FailureCategory
    step: int | None
    """The tool-call step (1-based) at which it went wrong; ``None`` when it is about the end state or reply."""
    evidence: str
    """What shows it, in words: the call, the error, expected vs actual."""


def _first(calls: list[ToolCall], statuses: tuple[str, ...]) -> ToolCall | None:
    return next((c for c in calls if c.status in statuses), None)


def _candidates(case: Case, grades: list[Grade], calls: list[ToolCall], messages: list[Message],
                end_reason: str, error: str | None) -> list[Failure]:
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
            if c.kind == "write" and c.committed:
                if c.signature() in seen:
                    first = seen[c.signature()]
                    lost = " whose response was lost" if first.status == "fault" else ""
                    out.append(Failure(category="duplicate_write", step=c.step,
                                       evidence=f"{c.tool} committed again at step {c.step} with the same arguments "
                                                f"after step {first.step}{lost}; {state_failed[0].reason}"))
                    break
                seen[c.signature()] = c
    if "no_loop" in names:
        g = next(g for g in failed if g.name == "no_loop")
        counts: dict[str, int] = {}
        for c in calls:
            counts[c.signature()] = counts.get(c.signature(), 0) + 1
            if counts[c.signature()] == case.rules.loop_threshold:
                out.append(Failure(category="tool_loop", step=c.step, evidence=g.reason))
                break
    faulted_tools = {c.tool for c in calls if c.fault or c.status in ("tool_error", "exception")}
    for g in failed:
        if g.grader == "trajectory":
            if g.name.startswith("required ") and g.name.split()[1].split("(")[0] in faulted_tools:
                continue  # the required call failed on a fault: unrecovered_tool_error says it better
            if g.name.startswith("required ") and not calls:
                continue  # nothing was done at all: that is the wrong final state, not a skipped check
            m = re.search(r"at step (\d+)", g.reason)
            out.append(Failure(category="skipped_verification", step=int(m.group(1)) if m else None, evidence=g.reason))
    outcome_failed = [g for g in failed if g.grader in ("state", "reply", "trajectory")]
    faulted = [c for c in calls if c.fault or c.status in ("tool_error", "exception")]
    if outcome_failed and faulted:
        f = faulted[0]
        after = next((c.step for c in calls if c.step > f.step), None)
        out.append(Failure(category="unrecovered_tool_error", step=after,
                           evidence=f"after {f.tool} at step {f.step} ({f.fault or f.status}: {f.error or 'changed result'}): "
                                    f"{outcome_failed[0].reason}"))
    for g in state_failed:
        if g.name.startswith("unchanged_except"):
            write = next((c for c in calls if c.kind == "write" and c.committed), None)
            out.append(Failure(category="side_effect_outside_scope", step=write.step if write else None, evidence=g.reason))
    if "valid_arguments" in names:
        if c := _first(calls, ("invalid_arguments",)):
            out.append(Failure(category="invalid_arguments", step=c.step, evidence=f"{c.tool}: {c.error}"))
    other_state = [g for g in state_failed if not g.name.startswith("unchanged_except")]
    if other_state:
        reply = " ".join(m.text for m in messages if m.role == "agent")
        missing = any(("actual 0" in g.reason or "no row matches" in g.reason) for g in other_state)
        if missing and SUCCESS_CLAIM.search(reply):
            out.append(Failure(category="claimed_success_without_state", step=None,
                               evidence=f"{other_state[0].reason}; yet the reply says: {reply[-160:]!r}"))
        out.append(Failure(category="wrong_final_state", step=None, evidence=other_state[0].reason))
    if "within_limits" in names:
        out.append(Failure(category="limit_exceeded", step=calls[-1].step if calls else None,
                           evidence=next(g.reason for g in failed if g.name == "within_limits")))
    for g in failed:
        if g.grader == "reply":
            out.append(Failure(category="missing_information_in_reply", step=None, evidence=g.reason))
        if g.grader == "judge":
            out.append(Failure(category="judge_failure", step=None, evidence=g.reason))
    if end_reason == "agent_error":
        last = (error or "").strip().splitlines()[-1:] or ["agent raised"]
        out.append(Failure(category="agent_error", step=None, evidence=last[0]))
    return out


def attribute(case: Case, outcome: str, grades: list[Grade], calls: list[ToolCall], messages: list[Message],
              end_reason: str, error: str | None) -> Failure | None:
    """The primary failure of a trial, or ``None`` when it passed."""
    if outcome == "pass":
        return None
    if outcome == "error":
        last = (error or "").strip().splitlines()[-1:] or ["harness error"]
        return Failure(category="infrastructure_error", step=None, evidence=last[0])
    found = _candidates(case, grades, calls, messages, end_reason, error)
    if not found:
        first = next((g for g in grades if g.required and not g.passed), None)
        return Failure(category="wrong_final_state", step=None, evidence=first.reason if first else "failed")
    return min(found, key=lambda f: (f.step is None, f.step or 0, PRIORITY.index(f.category)))
