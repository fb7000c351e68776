"""Model-driven agents, and the model clients the LLM user and the LLM judge share.

``openai:MODEL`` (chat completions; any OpenAI-compatible ``base_url``) and ``anthropic:MODEL``
(messages API), both through the official SDKs, which are optional extras imported on first use.
"""

from __future__ import annotations

from pathlib import Path

from passhat.agents.llm.anthropic_chat import AnthropicChat
from passhat.agents.llm.chat import (
    PROVIDERS,
    CallOptions,
    ChatMessage,
    ChatModel,
    ModelReply,
    ToolRequest,
    is_model_spec,
    parse_model_spec,
    text_hash,
)
from passhat.agents.llm.loop import STOP_TOKEN, AgentSettings, ModelAgent
from passhat.agents.llm.openai_chat import OpenAIChat
from passhat.agents.llm.pricing import Price, PriceTable, load_price_table
from passhat.agents.llm.retry import RetryPolicy


def chat_model(
    spec: str, *, base_url: str | None = None, retry: RetryPolicy | None = None, timeout_s: float = 120.0
) -> ChatModel:
    """A client for ``openai:MODEL`` or ``anthropic:MODEL`` (no network until the first call)."""
    provider, model = parse_model_spec(spec)
    if provider == "openai":
        return OpenAIChat(model, base_url=base_url, retry=retry, timeout_s=timeout_s)
    return AnthropicChat(model, base_url=base_url, retry=retry, timeout_s=timeout_s)


def model_agent(
    spec: str,
    *,
    base_url: str | None = None,
    settings: AgentSettings | None = None,
    retry: RetryPolicy | None = None,
    prices: PriceTable | Path | None = None,
) -> ModelAgent:
    """The agent for ``openai:MODEL`` / ``anthropic:MODEL``; ``prices`` is a table or a price file."""
    table = prices if isinstance(prices, PriceTable) else load_price_table(prices)
    return ModelAgent(chat_model(spec, base_url=base_url, retry=retry), settings, table)


__all__ = [
    "PROVIDERS", "STOP_TOKEN", "AgentSettings", "AnthropicChat", "CallOptions", "ChatMessage", "ChatModel",
    "ModelAgent", "ModelReply", "OpenAIChat", "Price", "PriceTable", "RetryPolicy", "ToolRequest", "chat_model",
    "is_model_spec", "load_price_table", "model_agent", "parse_model_spec", "text_hash",
]
