"""Rule grader: zero-cost, deterministic vetoes on the trajectory and budgets."""

from __future__ import annotations

from collections import Counter

from passhat.graders.base import Grade, TrialView

DENIED = ("denied", "forbidden", "not_allowed")


def grade_rules(view: TrialView) -> list[Grade]:
    """Loops, denied attempts, unknown tools, invalid arguments, limits and agent errors."""
    rules = view.case.rules
    calls = view.calls
    grades: list[Grade] = []

    counts = Counter(c.signature() for c in calls if c.status != "unknown_tool")
    worst = counts.most_common(1)
    looped = worst and worst[0][1] >= rules.loop_threshold
    grades.append(Grade(
        grader="rules", name="no_loop", passed=not looped,
        reason=(f"loop: {worst[0][0].split('|')[0]} called {worst[0][1]} times with identical arguments "
                f"(threshold {rules.loop_threshold})") if looped else "no repeated identical calls",
    ))

    denied = [c for c in calls if c.status in DENIED]
    if rules.denied_calls_fail:
        grades.append(Grade(
            grader="rules", name="no_denied_calls", passed=not denied,
            reason="; ".join(f"step {c.step}: {c.tool} {c.status}: {c.error}" for c in denied)
            or "no call was denied by the tool layer",
        ))

    unknown = [c for c in calls if c.status == "unknown_tool"]
    grades.append(Grade(
        grader="rules", name="no_unknown_tools", passed=not unknown,
        reason="; ".join(f"step {c.step}: fabricated tool {c.tool!r}" for c in unknown) or "only declared tools used",
    ))

    invalid = [c for c in calls if c.status == "invalid_arguments"]
    limit = rules.max_invalid_arguments
    grades.append(Grade(
        grader="rules", name="valid_arguments", required=limit is not None,
        passed=limit is None and not invalid or (limit is not None and len(invalid) <= limit),
        reason="; ".join(f"step {c.step}: {c.tool}: {c.error}" for c in invalid) or "all arguments valid",
        details={"invalid_calls": len(invalid)},
    ))

    within = view.end_reason not in ("step_limit", "time_limit", "cost_limit")
    grades.append(Grade(
        grader="rules", name="within_limits", passed=within,
        reason=f"trial ended by {view.end_reason}" if not within else
        f"{len(calls)} calls, {view.agent_seconds:.2f}s, cost {view.usage.cost:.4f} within limits",
    ))
    if view.end_reason == "agent_error":
        grades.append(Grade(grader="rules", name="agent_completed", passed=False,
                            reason=f"the agent raised: {(view.error or '').strip().splitlines()[-1:] or ['?']}"))
    return grades
