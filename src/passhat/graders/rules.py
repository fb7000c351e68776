"""Rule grader: zero-cost, deterministic vetoes on the trajectory and budgets."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from passhat.graders.base import Grade, TrialView
from passhat.tools import ToolCall

DENIED = ("denied", "forbidden", "not_allowed")


def grade_rules(view: TrialView) -> list[Grade]:
    """Loops, denied attempts, unknown tools, invalid arguments, limits and agent errors."""
    rules = view.case.rules
    calls = [c for c in view.calls if c.by == "agent"]  # the user's own calls (dual control) are not the agent's conduct
    grades: list[Grade] = []

    worst, repeats = _worst_repeat(calls)
    looped = repeats >= rules.loop_threshold
    signature = (worst.signature() if worst is not None else "") if looped else ""
    grades.append(Grade(
        grader="rules", name="no_loop", passed=not looped, required=rules.loops_fail,
        reason=(f"loop: {signature.split('|')[0]} called {repeats} times with identical arguments and no other "
                f"change in between (threshold {rules.loop_threshold})") if looped else "no repeated identical calls",
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
        grader="rules", name="no_unknown_tools", passed=not unknown, required=rules.unknown_tools_fail,
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

    within = view.end_reason not in ("step_limit", "time_limit", "cost_limit", "error_limit")
    grades.append(Grade(
        grader="rules", name="within_limits", passed=within,
        reason=f"trial ended by {view.end_reason}" if not within else
        f"{len(calls)} calls, {view.agent_seconds:.2f}s, cost {view.usage.cost:.4f} within limits",
    ))
    if view.end_reason == "agent_error":
        grades.append(Grade(grader="rules", name="agent_completed", passed=False,
                            reason=f"the agent raised: {(view.error or '').strip().splitlines()[-1:] or ['?']}"))
    return grades


def repeat_counts(calls: list[ToolCall]) -> Iterator[tuple[ToolCall, int]]:
    """Each call with how many times in a row, without progress, it has been made (itself included).

    A loop is repetition without progress. Running the tests, fixing a file and running them again is
    two identical calls with a change between them, not a loop; reading the same record three times
    while nothing changes is one. A committed write by any *other* call restarts the count of every
    call; an identical write repeated (a refund issued twice) keeps counting. Unknown tools are left
    out (their own rule reports them).
    """
    progress = 0
    seen: dict[str, tuple[int, int]] = {}
    """signature → (repeats so far, committed writes seen when it was last called, its own included)"""
    named = Counter(c.tool for c in calls if c.status != "unknown_tool")
    for c in calls:
        if c.status == "unknown_tool":
            continue
        if named[c.tool] == 1:  # the only call of its tool: no other call has its signature, so its count is 1
            # (a signature is a JSON encoding, ~20 µs; most trials call each tool once)
            if c.kind == "write" and c.committed:
                progress += 1
            yield c, 1
            continue
        sig = c.signature()
        count, mark = seen.get(sig, (0, -1))
        count = count + 1 if mark == progress else 1
        if c.kind == "write" and c.committed:
            progress += 1
        seen[sig] = (count, progress)
        yield c, count


def _worst_repeat(calls: list[ToolCall]) -> tuple[ToolCall | None, int]:
    """The call repeated most often without progress (:func:`repeat_counts`) and its count."""
    worst: ToolCall | None = None
    most = 0
    for c, count in repeat_counts(calls):
        if count > most:
            worst, most = c, count
    return worst, most
