"""A provider-neutral chat turn: what the agent loop, the LLM user and the judge say to any model.

The adapters (``openai_chat``, ``anthropic_chat``) translate these to each wire format, so the loop,
the user simulator and the judge are written once and tested once against both.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from passhat.tools import Tool

Provider = Literal["openai", "anthropic"]
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic")


@dataclass(frozen=True)
class ToolRequest:
    """One tool call the model asked for. ``arguments`` is the parsed JSON object, or the raw text when
    the model sent something that is not a JSON object (the tool boundary then records invalid arguments)."""

    id: str
    name: str
    arguments: Any


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation with a model."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_calls: tuple[ToolRequest, ...] = ()
    """For ``assistant``: the tool calls it made."""
    tool_call_id: str | None = None
    """For ``tool``: which call this is the result of."""
    is_error: bool = False
    """For ``tool``: the call failed (Anthropic marks such results)."""


@dataclass
class ModelReply:
    """What one model call returned, with what it cost and how long it took."""

    text: str
    tool_calls: list[ToolRequest]
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    time_to_first_token_s: float | None = None
    """From sending the request to the first streamed token (text or tool call)."""
    latency_s: float = 0.0
    """Wall time of the whole call, retries included."""
    stop_reason: str | None = None
    attempts: int = 1
    """1 plus the number of retries it took."""


@dataclass(frozen=True)
class CallOptions:
    """Sampling settings for one call. ``None`` leaves the provider's default (and records that)."""

    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    json_answer: bool = False
    """Ask for a JSON object where the API supports it (the answer is validated either way)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider-specific request fields, passed through unchanged."""


class ChatModel(Protocol):
    """A model that answers a conversation; adapters implement it with the official SDKs."""

    provider: str
    model: str

    async def complete(
        self, system: str, messages: list[ChatMessage], tools: list[Tool], options: CallOptions
    ) -> ModelReply: ...

    def describe(self) -> dict[str, Any]:
        """What the manifest records about this model (provider, model, base URL; never the key)."""
        ...


def parse_model_spec(spec: str) -> tuple[Provider, str]:
    """``openai:gpt-4.1`` → ``("openai", "gpt-4.1")``; raises ValueError naming the valid prefixes."""
    provider, sep, model = spec.partition(":")
    if not sep or provider not in PROVIDERS or not model:
        raise ValueError(f"model {spec!r}: expected PROVIDER:MODEL with PROVIDER one of {', '.join(PROVIDERS)}")
    return provider, model  # type: ignore[return-value]


def is_model_spec(spec: str) -> bool:
    return spec.partition(":")[0] in PROVIDERS and bool(spec.partition(":")[2])


STOP_TOKEN = "###DONE###"
"""The default marker a model ends its final message with: the model-driven agent and the LLM user stop on it."""


def split_stop(text: str, stop_token: str) -> tuple[str, bool]:
    """The text without the stop token, and whether the token was there."""
    if stop_token and stop_token in text:
        return text.replace(stop_token, "").strip(), True
    return text.strip(), False


def text_hash(*parts: str) -> str:
    """Short SHA-256 of prompt text: two runs used the same prompt only if the hashes are equal."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()[:16]


def fit_to_signature(create: Callable[..., Any], request: dict[str, Any]) -> dict[str, Any]:
    """Move request fields the installed SDK's ``create`` does not name into ``extra_body``.

    SDK releases add and drop keyword arguments (``temperature`` is not a parameter of every
    ``anthropic`` release); the HTTP API still takes them, so they are sent as body fields rather than
    failing with a TypeError on one SDK version and not another.
    """
    try:
        params = inspect.signature(create).parameters
    except (TypeError, ValueError):
        return request
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return request
    known = {k: v for k, v in request.items() if k in params}
    extra = {k: v for k, v in request.items() if k not in params}
    if extra:
        known["extra_body"] = {**known.get("extra_body", {}), **extra}
    return known
