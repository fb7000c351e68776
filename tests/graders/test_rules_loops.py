"""The loop rule counts repetition without progress (graders/rules.py ``repeat_counts``)."""

from __future__ import annotations

from passhat.graders.rules import repeat_counts
from passhat.tools import ToolCall


def _call(step: int, tool: str, kind: str = "read", committed: bool = True, **arguments: object) -> ToolCall:
    return ToolCall(step=step, tool=tool, arguments=arguments, status="ok", kind=kind, committed=committed)  # type: ignore[arg-type]


def _counts(calls: list[ToolCall]) -> list[int]:
    return [n for _, n in repeat_counts(calls)]


def test_identical_calls_with_nothing_changing_count_up() -> None:
    calls = [_call(i, "list_notes") for i in range(1, 4)]
    assert _counts(calls) == [1, 2, 3]


def test_a_write_in_between_is_progress() -> None:
    test = {"command": "pytest -q"}
    calls = [_call(1, "run_command", "write", **test), _call(2, "write_file", "write", path="a.py", content="x"),
             _call(3, "run_command", "write", **test), _call(4, "run_command", "write", **test)]
    assert _counts(calls) == [1, 1, 1, 2]  # test → fix → test is not a loop; test → test again counts


def test_the_same_write_repeated_keeps_counting() -> None:
    refund = {"order_id": 4812, "amount": 95.0}
    calls = [_call(1, "issue_refund", "write", **refund), _call(2, "issue_refund", "write", **refund),
             _call(3, "get_order", order_id=4812), _call(4, "issue_refund", "write", **refund)]
    assert _counts(calls) == [1, 2, 1, 3]


def test_a_write_that_did_not_commit_is_no_progress() -> None:
    calls = [_call(1, "get_order", order_id=1), _call(2, "issue_refund", "write", committed=False, order_id=1),
             _call(3, "get_order", order_id=1)]
    assert _counts(calls) == [1, 1, 2]


def _counts_by_signature(calls: list[ToolCall]) -> list[int]:
    """repeat_counts as it was before it skipped the signature of a tool called once: every call's signature."""
    progress, seen, out = 0, {}, []
    for c in calls:
        if c.status == "unknown_tool":
            continue
        count, mark = seen.get(c.signature(), (0, -1))
        count = count + 1 if mark == progress else 1
        if c.kind == "write" and c.committed:
            progress += 1
        seen[c.signature()] = (count, progress)
        out.append(count)
    return out


def test_a_tool_called_once_counts_as_its_signature_would() -> None:
    """A call whose tool no other call has is counted 1 without its signature: the same counts as by signatures."""
    import random

    rng = random.Random(7)
    for _ in range(500):
        calls = []
        for step in range(1, rng.randint(0, 9)):
            tool = rng.choice(["get_order", "issue_refund", "send_email", "a|b", "a"])
            call = _call(step, tool, rng.choice(["read", "write"]), rng.random() < 0.7, order_id=rng.randint(1, 2))
            if rng.random() < 0.1:
                call = call.model_copy(update={"status": "unknown_tool"})
            calls.append(call)
        assert _counts(calls) == _counts_by_signature(calls)
