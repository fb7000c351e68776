"""Traces: each trial as a tree of spans (trial → agent → model / tool / user turns, and grading).

Spans are built from what the harness recorded — tool calls, messages, model calls the agent reported,
grading time — so every trial has a trace whatever the agent, and no agent can forget to emit one.
IDs are derived from the trial seed so a re-run produces the same trace shape.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.episode import Message, ModelCall
from passhat.seeding import derive_seed, seed_sequence
from passhat.tools import ToolCall

SpanKind = Literal["trial", "agent", "model", "tool", "user", "grading"]


class Span(BaseModel):
    """One timed step of a trial."""

    model_config = ConfigDict(use_attribute_docstrings=True)
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
    """The span tree of one trial, in start order."""
    counter = iter(range(1, 1_000_000))
    span_seed = seed_sequence("span", seed)  # derive_seed("span", seed, n)

    def sid() -> str:
        return f"{span_seed(next(counter)):016x}"

    # the spans are made as dicts and validated together: one pass through pydantic-core instead of one per span
    root_id, agent_id = sid(), sid()
    spans: list[dict[str, Any]] = [
        {"span_id": root_id, "name": f"trial {case_id}", "kind": "trial", "start_s": 0.0, "end_s": agent_s + grade_s,
         "status": "error" if end_reason in ("agent_error", "harness_error") else "ok",
         "attributes": {"passhat.case_id": case_id, "passhat.end_reason": end_reason, **(attributes or {})}},
        {"span_id": agent_id, "parent_id": root_id, "name": "agent", "kind": "agent", "start_s": 0.0, "end_s": agent_s,
         "status": "error" if error and end_reason == "agent_error" else "ok",
         "error": (error or "").strip().splitlines()[-1] if error else None},
    ]
    for m in model_calls:
        end = m.started_at + (m.latency_s or 0.0)
        spans.append({
            "span_id": sid(), "parent_id": agent_id, "name": f"chat {m.model or 'model'}", "kind": "model",
            "start_s": m.started_at, "end_s": end, "status": "error" if m.error else "ok", "error": m.error,
            "attributes": {"gen_ai.request.model": m.model, "gen_ai.usage.input_tokens": m.input_tokens,
                           "gen_ai.usage.output_tokens": m.output_tokens, "passhat.cost": m.cost,
                           "passhat.time_to_first_token_s": m.time_to_first_token_s,
                           "passhat.prompt_hash": m.prompt_hash},
        })
    for c in calls:
        failed = c.status != "ok"
        spans.append({
            "span_id": sid(), "parent_id": agent_id, "name": f"execute_tool {c.tool}", "kind": "tool",
            "start_s": c.started_at, "end_s": c.started_at + c.duration_ms / 1000, "status": "error" if failed else "ok",
            "error": c.error if failed else None,
            "attributes": {"gen_ai.tool.name": c.tool, "passhat.step": c.step, "passhat.tool.status": c.status,
                           "passhat.tool.kind": c.kind, "passhat.fault": c.fault, "passhat.committed": c.committed},
        })
    for i, msg in enumerate(messages[1:], start=1):
        if msg.role == "user":
            spans.append({"span_id": sid(), "parent_id": agent_id, "name": "user turn", "kind": "user",
                          "start_s": msg.at, "end_s": msg.at, "attributes": {"passhat.message_index": i}})
    spans.append({"span_id": sid(), "parent_id": root_id, "name": "grading", "kind": "grading",
                  "start_s": agent_s, "end_s": agent_s + grade_s})
    return sorted(_SPANS.validate_python(spans), key=lambda s: (s.start_s, s.kind != "trial", s.kind != "agent"))


_SPANS = TypeAdapter(list[Span])
