"""Traces: each trial as a tree of spans (trial → agent → model / tool / user turns, and grading).

Spans are built from what the harness recorded — tool calls, messages, model calls the agent reported,
grading time — so every trial has a trace whatever the agent, and no agent can forget to emit one.
IDs are derived from the trial seed so a re-run produces the same trace shape.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat._trusted import trusted
from passhat.episode import Message, ModelCall
from passhat.models.finite import STRICT_FLOATS
from passhat.seeding import derive_seed, seed_sequence
from passhat.tools import ToolCall

SpanKind = Literal["trial", "agent", "model", "tool", "user", "grading"]


class Span(BaseModel):
    """One timed step of a trial."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
    span_id: str
    """The span's id, unique within the trial."""
    parent_id: str | None = None
    """The enclosing span (None for the trial's root span)."""
    name: str
    """What it is, e.g. the tool or model called."""
    kind: SpanKind
    """``trial``, ``agent``, ``model``, ``tool``, ``user`` or ``grading``."""
    start_s: float
    """Seconds since the trial started."""
    end_s: float
    """Seconds since the trial started, at its end."""
    status: Literal["ok", "error"] = "ok"
    """``error`` when the step failed."""
    error: str | None = None
    """What went wrong, when it did."""
    attributes: dict[str, Any] = Field(default_factory=dict)
    """Its attributes as exported to OpenTelemetry (tokens, arguments, status…)."""


def trace_id(seed: int) -> str:
    """A 128-bit trace id (hex) derived from the trial seed."""
    return f"{derive_seed('trace', seed):016x}{derive_seed('trace2', seed):016x}"[:32]


def build_spans(
    *,
    seed: int,
    case_id: str,
    calls: list[ToolCall],
    messages: list[Message],
    model_calls: list[ModelCall],
    agent_s: float,
    grade_s: float,
    end_reason: str,
    error: str | None,
    attributes: dict[str, Any] | None = None,
) -> list[Span]:
    """The span tree of one trial, in start order.

    The spans are made without validation (passhat/_trusted.py): every value comes from the trial's validated
    records (calls, messages, model calls) or from the runner, of its field's type. Validating nine spans cost
    ~135 K instructions a trial; tests/test_tracing.py holds what is made to what validation makes."""
    span_seed = seed_sequence("span", seed)  # derive_seed("span", seed, n)
    n = 0

    def span(parent_id: str | None, name: str, kind: SpanKind, start_s: float, end_s: float, status: str = "ok",
             error: str | None = None, attributes: dict[str, Any] | None = None) -> Span:
        nonlocal n
        n += 1
        return trusted(Span, {"span_id": f"{span_seed(n):016x}", "parent_id": parent_id, "name": name, "kind": kind,
                              "start_s": start_s, "end_s": end_s, "status": status, "error": error,
                              "attributes": {} if attributes is None else attributes})

    root = span(None, f"trial {case_id}", "trial", 0.0, agent_s + grade_s,
                "error" if end_reason in ("agent_error", "harness_error") else "ok", None,
                {"passhat.case_id": case_id, "passhat.end_reason": end_reason, **(attributes or {})})
    root_id = root.span_id
    agent = span(root_id, "agent", "agent", 0.0, agent_s, "error" if error and end_reason == "agent_error" else "ok",
                 (error or "").strip().splitlines()[-1] if error else None)
    agent_id = agent.span_id
    spans = [root, agent]
    for m in model_calls:
        spans.append(span(
            agent_id, f"chat {m.model or 'model'}", "model", m.started_at, m.started_at + (m.latency_s or 0.0),
            "error" if m.error else "ok", m.error,
            {"gen_ai.request.model": m.model, "gen_ai.usage.input_tokens": m.input_tokens,
             "gen_ai.usage.output_tokens": m.output_tokens, "passhat.cost": m.cost,
             "passhat.time_to_first_token_s": m.time_to_first_token_s, "passhat.prompt_hash": m.prompt_hash},
        ))
    for c in calls:
        failed = c.status != "ok"
        spans.append(span(
            agent_id, f"execute_tool {c.tool}", "tool", c.started_at, c.started_at + c.duration_ms / 1000,
            "error" if failed else "ok", c.error if failed else None,
            {"gen_ai.tool.name": c.tool, "passhat.step": c.step, "passhat.tool.status": c.status,
             "passhat.tool.kind": c.kind, "passhat.fault": c.fault, "passhat.committed": c.committed},
        ))
    for i, msg in enumerate(messages[1:], start=1):
        if msg.role == "user":
            spans.append(span(agent_id, "user turn", "user", msg.at, msg.at, attributes={"passhat.message_index": i}))
    spans.append(span(root_id, "grading", "grading", agent_s, agent_s + grade_s))
    return sorted(spans, key=_start_order)


def _start_order(s: Span) -> tuple[float, bool, bool]:
    """Start order; the trial's span and then the agent's first among spans that start together."""
    return (s.start_s, s.kind != "trial", s.kind != "agent")


