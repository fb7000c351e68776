"""OpenAI chat completions (and any OpenAI-compatible server: vLLM, Ollama, LM Studio, llama.cpp).

Uses the official ``openai`` SDK, imported only when a model is first called, so passhat installs and
runs without it. Calls stream, so the time to the first token is measured; the SDK's own retries are
off and :mod:`passhat.llm.retry` decides what a failure means for the trial.
"""

from __future__ import annotations

import json
import time
from typing import Any

from passhat.errors import PasshatError
from passhat.llm.chat import CallOptions, ChatMessage, ModelReply, ToolRequest, fit_to_signature
from passhat.llm.retry import IncompleteAnswer
from passhat.llm.sdk_base import SdkChat
from passhat.outages import stalls_bounded, stream_data, unless_stalled
from passhat.tools import Tool

"""Sent to a ``--base-url`` server when no key is set: local servers ignore it, the SDK requires one."""


def _import_sdk() -> Any:
    try:
        import openai
    except ImportError:
        raise PasshatError("openai:MODEL needs the OpenAI SDK: pip install 'passhat[openai]'") from None
    return openai


def to_openai_messages(system: str, messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Neutral messages → chat-completions messages (tool results as ``role: tool``)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text})
        elif m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {
                        "name": c.name,
                        "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments),
                    }}
                    for c in m.tool_calls
                ]
            out.append(msg)
        else:
            out.append({"role": "user", "content": m.text})
    return out


def parse_arguments(raw: str) -> Any:
    """The model's argument text as a JSON object; anything else is passed on raw, so the tool boundary
    records it as invalid arguments instead of the harness guessing what was meant."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # nested past the parser's stack: invalid arguments like any other
        return raw
    return value if isinstance(value, dict) else raw


class OpenAIChat(SdkChat):
    """A chat-completions model behind the official SDK."""

    provider = "openai"
    key_hint = "an OpenAI-compatible server"

    def __init__(self, model: str, *, api_key_env: str = "OPENAI_API_KEY", **options: Any) -> None:
        super().__init__(model, api_key_env=api_key_env, **options)

    def _make_client(self, api_key: str) -> Any:
        sdk = _import_sdk()
        return sdk.AsyncOpenAI(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s,
                                 http_client=self._http_client(sdk))

    def _request(self, system: str, messages: list[ChatMessage], tools: list[Tool], o: CallOptions) -> dict[str, Any]:
        req: dict[str, Any] = {
            "model": self.model, "messages": to_openai_messages(system, messages), "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            req["tools"] = [t.openai_spec() for t in tools]
        if o.temperature is not None:
            req["temperature"] = o.temperature
        if o.seed is not None:
            req["seed"] = o.seed
        if o.max_tokens is not None:
            req["max_tokens"] = o.max_tokens
        if o.stop:
            req["stop"] = list(o.stop)
        if o.json_answer:
            req["response_format"] = {"type": "json_object"}
        return {**req, **o.extra}

    async def _stream(self, request: dict[str, Any]) -> ModelReply:
        client = self._sdk_client()
        sent = time.monotonic()
        create = client.chat.completions.create
        what = f"openai:{self.model}"
        stream = await unless_stalled(create(**fit_to_signature(create, request)), what, "response headers")
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        ttft: float | None = None
        reply = ModelReply(text="", tool_calls=[], model=self.model)
        async for chunk in stalls_bounded(stream, what):
            stream_data()
            if getattr(chunk, "usage", None) is not None:
                reply.input_tokens = chunk.usage.prompt_tokens or 0
                reply.output_tokens = chunk.usage.completion_tokens or 0
            if getattr(chunk, "model", None):
                reply.model = chunk.model
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is not None and (delta.content or delta.tool_calls) and ttft is None:
                    ttft = time.monotonic() - sent
                if delta is not None and delta.content:
                    text.append(delta.content)
                for tc in (delta.tool_calls or []) if delta is not None else []:
                    slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = tc.id or slot["id"]
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["arguments"] += tc.function.arguments or ""
                if choice.finish_reason:
                    reply.stop_reason = choice.finish_reason
        if ttft is None and reply.stop_reason is None:
            raise IncompleteAnswer(f"openai:{self.model}: the stream ended without an answer")
        reply.text = "".join(text)
        reply.tool_calls = [
            ToolRequest(id=c["id"] or f"call_{i}", name=c["name"], arguments=parse_arguments(c["arguments"]))
            for i, c in sorted(calls.items())
        ]
        reply.time_to_first_token_s = ttft
        return reply
