"""Trajectory grader: required calls, real ordering dependencies, and custom trajectory graders."""

from __future__ import annotations

from typing import Any

from passhat.graders.base import Grade, TrialView
from passhat.graders.checks import grade_assertions
from passhat.world.diff import same_value


def _args_match(actual: Any, wanted: dict[str, Any]) -> bool:
    return isinstance(actual, dict) and all(k in actual and same_value(actual[k], v) for k, v in wanted.items())


def grade_trajectory(view: TrialView) -> list[Grade]:
    """Each required call succeeded at least once; each ``then`` came after a successful ``first``; then
    the case's assertions on custom trajectory graders."""
    grades: list[Grade] = []
    ok = [c for c in view.calls if (c.ok or c.committed) and c.by == "agent"]
    for req in view.case.required_tools:
        hit = any(c.tool == req.tool and _args_match(c.arguments, req.args) for c in ok)
        want = f"{req.tool}({', '.join(f'{k}={v!r}' for k, v in req.args.items())})"
        made = [c.tool for c in view.calls]
        grades.append(Grade(
            grader="trajectory", name=f"required {want}", passed=hit,
            reason=f"{want} succeeded" if hit else f"required call {want} never succeeded; calls made: {made or 'none'}",
        ))
    for rule in view.case.order:
        first_ok: int | None = None
        bad: list[int] = []
        for c in ok:
            if c.tool == rule.first and first_ok is None:
                first_ok = c.step
            if c.tool == rule.then and first_ok is None:
                bad.append(c.step)
        why = f" ({rule.reason})" if rule.reason else ""
        grades.append(Grade(
            grader="trajectory", name=f"order {rule.first} before {rule.then}", passed=not bad,
            reason=f"{rule.then} at step {bad[0]} came before any successful {rule.first}{why}" if bad
            else f"{rule.first} preceded every {rule.then}",
        ))
    grades += grade_assertions(view, "trajectory")
    return grades
