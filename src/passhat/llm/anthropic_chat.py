"""Anthropic messages API (tool_use / tool_result blocks), streamed, with the official ``anthropic`` SDK.

The SDK is imported only when a model is first called. The messages API has no sampling seed: the
trial seed is still recorded, and the manifest says the provider ignores it.
"""

from __future__ import annotations

import time
from typing import Any

from passhat.errors import PasshatError
from passhat.llm.chat import CallOptions, ChatMessage, ModelReply, ToolRequest, fit_to_signature
from passhat.llm.openai_chat import parse_arguments
from passhat.llm.retry import IncompleteAnswer
from passhat.llm.sdk_base import SdkChat
from passhat.outages import stalls_bounded, stream_data, unless_stalled
from passhat.tools import Tool

DEFAULT_MAX_TOKENS = 4096
"""The messages API requires ``max_tokens``; this is used when none is set."""


def _import_sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise PasshatError("anthropic:MODEL needs the Anthropic SDK: pip install 'passhat[anthropic]'") from None
    return anthropic


def _blocks(m: ChatMessage) -> list[dict[str, Any]]:
    if m.role == "tool":
        return [{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.text, "is_error": m.is_error}]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
    for c in m.tool_calls:
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name,
                       "input": c.arguments if isinstance(c.arguments, dict) else {}})
    return blocks


def to_anthropic_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Neutral messages → alternating user/assistant messages of content blocks.

    Tool results travel in a user message; consecutive messages of one role are merged, and a
    conversation that starts with the assistant (the LLM user's opening line) gets a neutral first turn.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        role = "assistant" if m.role == "assistant" else "user"
        blocks = _blocks(m) or [{"type": "text", "text": "(no text)"}]
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if out and out[0]["role"] == "assistant":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(The conversation starts.)"}]})
    return out


class AnthropicChat(SdkChat):
    """A Claude model (or an Anthropic-compatible server) behind the official SDK."""

    provider = "anthropic"

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "ANTHROPIC_API_KEY",
                 **options: Any) -> None:
        super().__init__(model, base_url=base_url, api_key_env=api_key_env, **options)
        # the SDK appends /v1/messages itself; accept an OpenAI-style URL ending in /v1 too
        self.base_url = base_url.rstrip("/").removesuffix("/v1") if base_url else None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "seed_supported": False}

    def _make_client(self, api_key: str) -> Any:
        sdk = _import_sdk()
        return sdk.AsyncAnthropic(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s,
                                    http_client=self._http_client(sdk))

    def _request(self, system: str, messages: list[ChatMessage], tools: list[Tool], o: CallOptions) -> dict[str, Any]:
        req: dict[str, Any] = {
            "model": self.model, "messages": to_anthropic_messages(messages), "stream": True,
            "max_tokens": o.max_tokens or DEFAULT_MAX_TOKENS,
        }
        if system:
            req["system"] = system
        if tools:
            req["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
        if o.temperature is not None:
            req["temperature"] = o.temperature
        if o.stop:
            req["stop_sequences"] = list(o.stop)
        return {**req, **o.extra}

    async def _stream(self, request: dict[str, Any]) -> ModelReply:
        client = self._sdk_client()
        sent = time.monotonic()
        create = client.messages.create
        what = f"anthropic:{self.model}"
        stream = await unless_stalled(create(**fit_to_signature(create, request)), what, "response headers")
        reply = ModelReply(text="", tool_calls=[], model=self.model)
        blocks: dict[int, dict[str, Any]] = {}
        ttft: float | None = None
        stopped = False
        async for event in stalls_bounded(stream, what):
            stream_data()
            kind = event.type
            if kind == "message_start":
                usage = event.message.usage
                reply.input_tokens = usage.input_tokens or 0
                reply.output_tokens = usage.output_tokens or 0
                reply.model = event.message.model or reply.model
            elif kind == "content_block_start":
                cb = event.content_block
                blocks[event.index] = {"type": cb.type, "id": getattr(cb, "id", ""), "name": getattr(cb, "name", ""),
                                       "text": getattr(cb, "text", "") or "", "json": ""}
            elif kind == "content_block_delta":
                if ttft is None:
                    ttft = time.monotonic() - sent
                block = blocks.setdefault(event.index, {"type": "text", "text": "", "json": "", "id": "", "name": ""})
                delta = event.delta
                if delta.type == "text_delta":
                    block["text"] += delta.text
                elif delta.type == "input_json_delta":
                    block["json"] += delta.partial_json
            elif kind == "message_delta":
                reply.stop_reason = event.delta.stop_reason
                if event.usage is not None and event.usage.output_tokens is not None:
                    reply.output_tokens = event.usage.output_tokens
            elif kind == "message_stop":
                stopped = True
        if not stopped:
            raise IncompleteAnswer(f"anthropic:{self.model}: the stream ended before message_stop")
        ordered = [blocks[i] for i in sorted(blocks)]
        reply.text = "".join(b["text"] for b in ordered if b["type"] == "text")
        reply.tool_calls = [
            ToolRequest(id=b["id"], name=b["name"], arguments=parse_arguments(b["json"]) if b["json"] else {})
            for b in ordered if b["type"] == "tool_use"
        ]
        reply.time_to_first_token_s = ttft
        return reply
