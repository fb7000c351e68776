"""The model layer: clients for ``openai:MODEL`` and ``anthropic:MODEL``, retries, rate limits, prices and
usage accounting, shared by the model-driven agent (:mod:`passhat.agents.model`), the LLM user
(:mod:`passhat.users.llm`) and the LLM judge (:mod:`passhat.graders.judge`).

It sits below all three and imports none of them (tests/test_layers.py holds the order). ``openai:MODEL``
(chat completions; any OpenAI-compatible ``base_url``) and ``anthropic:MODEL`` (messages API) go through the
official SDKs, which are optional extras imported on first use.
"""

from __future__ import annotations

from passhat.llm.anthropic_chat import AnthropicChat
from passhat.llm.chat import (
    PROVIDERS,
    STOP_TOKEN,
    CallOptions,
    ChatMessage,
    ChatModel,
    ModelReply,
    ToolRequest,
    is_model_spec,
    parse_model_spec,
    split_stop,
    text_hash,
)
from passhat.llm.openai_chat import OpenAIChat
from passhat.llm.pricing import Price, PriceTable, load_price_table
from passhat.llm.retry import RetryPolicy


def chat_model(
    spec: str, *, base_url: str | None = None, retry: RetryPolicy | None = None, timeout_s: float = 120.0
) -> ChatModel:
    """A client for ``openai:MODEL`` or ``anthropic:MODEL`` (no network until the first call)."""
    provider, model = parse_model_spec(spec)
    if provider == "openai":
        return OpenAIChat(model, base_url=base_url, retry=retry, timeout_s=timeout_s)
    return AnthropicChat(model, base_url=base_url, retry=retry, timeout_s=timeout_s)


__all__ = [
    "PROVIDERS", "STOP_TOKEN", "AnthropicChat", "CallOptions", "ChatMessage", "ChatModel", "ModelReply", "OpenAIChat",
    "Price", "PriceTable", "RetryPolicy", "ToolRequest", "chat_model", "is_model_spec", "load_price_table",
    "parse_model_spec", "split_stop", "text_hash",
]
