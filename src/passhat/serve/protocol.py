"""The wire protocol between passhat and an agent that runs elsewhere (a service, a command, a process).

One trial = one start message (:class:`TrialStart`: what the agent is asked, where its tools are, its
token and deadline) and one answer (:class:`AgentReply`). During the trial the agent calls the trial's
tools over plain JSON/HTTP or MCP and may talk to the simulated user; every request carries
``Authorization: Bearer <token>``. The JSON Schemas of both messages are printed by
``passhat agents schema`` and documented in docs/agents.md, so an agent in any language can implement
the protocol from the documentation alone.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)

PROTOCOL: Literal["passhat.trial/1"] = "passhat.trial/1"


class TrialStart(BaseModel):
    """What passhat sends an agent at the start of a trial (POST body, or ``PASSHAT_*`` variables)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    protocol: Literal["passhat.trial/1"] = PROTOCOL
    """Version of this protocol."""
    case_id: str
    """The case being run."""
    tags: dict[str, str] = {}
    """The case's tags (public metadata, e.g. ``{"scenario": "refund"}``); never the expected answer."""
    trial: int
    """0-based trial index within the case."""
    seed: int
    """Seed for the agent's own randomness (sampling); stable per trial, so a trial can be reproduced."""
    domain: str
    """Name of the domain (the sandboxed system the tools act on)."""
    instruction: str
    """The user's first message: the task."""
    policy: str
    """The domain's policy document (what a deployed agent would get as its system prompt)."""
    identity: str | None = None
    """Who the agent acts for (tools scope their data to it); ``null`` when the case names nobody."""
    trial_url: str
    """This trial's base URL: ``GET`` it for this message again."""
    tools_url: str
    """``GET`` lists the tools with their JSON Schemas; ``POST {tools_url}/{name}`` with the arguments as a
    JSON object calls one and answers ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``."""
    user_url: str
    """``POST {"text": "..."}`` sends a message to the user and answers ``{"reply": "..."}``, or
    ``{"reply": null}`` when the user has left."""
    usage_url: str
    """``POST`` one model call's usage (``{"model", "input_tokens", "output_tokens", "cost"?, "latency_s"?}``)
    so cost per success works; optional — OTLP spans or the reply's ``usage`` do the same."""
    mcp_url: str | None = None
    """The same tools (and ``send_message_to_user``) over MCP streamable HTTP; ``null`` when the ``mcp``
    extra is not installed (``pip install 'passhat[mcp]'``)."""
    otlp_url: str
    """OTLP/HTTP base URL for the agent's traces (``{otlp_url}/v1/traces``, JSON or protobuf): spans with
    GenAI attributes (``gen_ai.usage.input_tokens`` …) are recorded as model calls."""
    token: str
    """Send ``Authorization: Bearer <token>`` with every request; it is valid for this trial only."""
    model_urls: dict[str, str] = {}
    """The model relay's base URL per provider name (``--agent-model-relay NAME=URL``): give it to your SDK as
    its base URL, so that a provider that stalls is recorded as an outage (``error``), not as your time limit.
    Requests there carry your own API key. Empty without a relay."""
    deadline: float
    """When the trial's time runs out, as Unix time in seconds; the agent is stopped then."""
    time_limit_s: float
    """The case's time limit in seconds."""
    tool_timeout_s: float
    """How long to wait for a tool's answer before treating the call as timed out (it may or may not have
    happened). A planned timeout or lost response withholds the answer, so this is what one costs the agent.
    passhat's own clients use it: 2 s when every tool answers from the sandbox and the user is scripted (longer
    only to cover a planned latency: twice it, plus 1 s), a quarter of the time limit (1–30 s) when a tool may
    wait on the world outside (a command) or the user is model-played, never more than a quarter of the limit;
    ``$PASSHAT_TOOL_TIMEOUT_S`` sets it."""


class ReportedUsage(BaseModel):
    """Usage an agent reports: one model call (``usage_url``) or a whole trial (the reply's ``usage``)."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    model: str | None = None
    """Model name; with a known price and no ``cost``, the cost is computed from the run's price table."""
    input_tokens: int = Field(0, ge=0)
    """Prompt tokens."""
    output_tokens: int = Field(0, ge=0)
    """Completion tokens."""
    cost: float | None = Field(None, ge=0)
    """Cost in the price table's currency; ``null`` to have passhat compute it from the model's price."""
    latency_s: float | None = Field(None, ge=0)
    """Wall time of the model call, in seconds."""
    time_to_first_token_s: float | None = Field(None, ge=0)
    """Time to the first streamed token, in seconds."""

    @field_validator("cost", "latency_s", "time_to_first_token_s")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class AgentReply(BaseModel):
    """What an agent answers at the end of a trial (HTTP response body, or the last line of stdout)."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    reply: str | None = None
    """The agent's final message to the user (``null``: it said nothing)."""
    usage: ReportedUsage | None = None
    """What the trial cost, if the agent did not report it per model call (usage_url or OTLP)."""


def protocol_schemas() -> dict[str, Any]:
    """The JSON Schemas of the messages an agent exchanges with passhat."""
    return {"start": TrialStart.model_json_schema(), "reply": AgentReply.model_json_schema(),
            "usage": ReportedUsage.model_json_schema()}


def _json_type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_json_type(s) for s in schema["anyOf"])
    if "$ref" in schema:
        return "object (" + schema["$ref"].rsplit("/", 1)[-1] + ")"
    if "const" in schema:
        return f'"{schema["const"]}"'
    return str(schema.get("type", "any"))


def _field_rows(model: type[BaseModel]) -> list[str]:
    props = model.model_json_schema()["properties"]
    rows = []
    for name, field in model.model_fields.items():
        required = "" if field.is_required() else " (optional)"
        text = " ".join((field.description or "").split()).replace("``", "`").replace("|", "\\|")
        rows.append(f"| `{name}` | {_json_type(props[name])}{required} | {text} |")
    return rows


def protocol_reference() -> str:
    """docs/agent-protocol.md, generated from the models (a test keeps the file in sync)."""
    parts = [
        "# The agent protocol (generated)",
        "",
        "<!-- generated by `passhat agents protocol > docs/agent-protocol.md`; edit src/passhat/serve/protocol.py -->",
        "",
        f"Version `{PROTOCOL}`. How an agent in any language takes part in a trial: see "
        "[agents.md](agents.md#agents-that-run-elsewhere) for the walk-through.",
    ]
    for title, model in (("Start message", TrialStart), ("Reply", AgentReply), ("Usage report", ReportedUsage)):
        parts += ["", f"## {title}", "", " ".join((model.__doc__ or "").split()).replace("``", "`"), "",
                  "| field | type | meaning |", "|---|---|---|", *_field_rows(model)]
    parts += ["", "## JSON Schemas", "", "```json", json.dumps(protocol_schemas(), indent=2), "```", ""]
    return "\n".join(parts)


__all__ = ["PROTOCOL", "AgentReply", "ReportedUsage", "TrialStart", "protocol_reference", "protocol_schemas"]
