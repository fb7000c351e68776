"""A trial's span tree (passhat/tracing.py): made without validation, it must be what validation would make."""

from __future__ import annotations

from typing import Any

import pytest

from passhat.episode import Message, ModelCall
from passhat.seeding import derive_seed
from passhat.tools import ToolCall
from passhat.tracing import Span, build_spans


def _trial(error: str | None, end_reason: str) -> dict[str, Any]:
    calls = [ToolCall(step=1, tool="get_order", arguments={"order_id": 1}, status="ok", kind="read", committed=True,
                      started_at=0.5, duration_ms=2.0),
             ToolCall(step=2, tool="issue_refund", arguments={}, status="fault", kind="write", fault="timeout",
                      error="timed out", started_at=0.25, duration_ms=1.0)]
    messages = [Message(role="user", text="hi", at=0.0), Message(role="agent", text="which order?", at=0.1),
                Message(role="user", text="4812", at=0.1)]
    model_calls = [ModelCall(model="m", input_tokens=3, started_at=0.1, latency_s=0.2),
                   ModelCall(model=None, started_at=0.0, error="503")]
    return dict(seed=42, case_id="c", calls=calls, messages=messages, model_calls=model_calls, agent_s=0.75,
                grade_s=0.01, end_reason=end_reason, error=error, attributes={"passhat.trial": 3, "passhat.models": None})


@pytest.mark.parametrize(("error", "end_reason"), [(None, "completed"), ("Traceback\nValueError: x\n", "agent_error")])
def test_spans_are_what_validation_makes_of_them(error: str | None, end_reason: str) -> None:
    spans = build_spans(**_trial(error, end_reason))
    assert [s.kind for s in spans].count("tool") == 2 and [s.kind for s in spans].count("user") == 1
    for s in spans:
        validated = Span.model_validate(s.model_dump())
        assert s == validated and s.model_dump_json() == validated.model_dump_json()
        assert list(s.__dict__) == list(Span.model_fields)
        assert [type(v) for v in s.__dict__.values()] == [type(v) for v in validated.__dict__.values()]


def test_span_ids_follow_the_seed_and_spans_their_start() -> None:
    spans = build_spans(**_trial(None, "completed"))
    made = {s.span_id for s in spans}
    assert made == {f"{derive_seed('span', 42, n):016x}" for n in range(1, len(spans) + 1)}
    root = next(s for s in spans if s.kind == "trial")
    assert spans[:2] == [root, next(s for s in spans if s.kind == "agent")]  # they start together, the root first
    assert [s.start_s for s in spans] == sorted(s.start_s for s in spans)
    assert root.span_id == f"{derive_seed('span', 42, 1):016x}"
