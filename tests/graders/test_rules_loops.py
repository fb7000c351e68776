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
