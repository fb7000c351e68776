"""OpenAI chat completions (and any OpenAI-compatible server: vLLM, Ollama, LM Studio, llama.cpp).

Uses the official ``openai`` SDK, imported only when a model is first called, so passhat installs and
runs without it. Calls stream, so the time to the first token is measured; the SDK's own retries are
off and :mod:`passhat.agents.llm.retry` decides what a failure means for the trial.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from typing import Any

from passhat.agents.llm.chat import CallOptions, ChatMessage, ModelReply, ToolRequest, fit_to_signature
from passhat.agents.llm.retry import IncompleteAnswer, RetryPolicy, inspect_error, with_retries
from passhat.errors import PasshatError
from passhat.tools import Tool

PLACEHOLDER_KEY = "not-needed"
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
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


class OpenAIChat:
    """A chat-completions model behind the official SDK."""

    provider = "openai"

    def __init__(
        self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
        retry: RetryPolicy | None = None, timeout_s: float = 120.0,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        self._client: tuple[asyncio.AbstractEventLoop, Any] | None = None
        if not os.environ.get(api_key_env) and base_url is None:
            raise PasshatError(f"openai:{model}: set {api_key_env}, or pass --base-url for an OpenAI-compatible server")

    def describe(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "base_url": self.base_url,
                "api_key_env": self.api_key_env, "retry": dataclasses.asdict(self.retry)}

    def _sdk_client(self) -> Any:
        """One client per event loop (an HTTP client must not outlive the loop it was made on)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client[0] is not loop:
            sdk = _import_sdk()
            key = os.environ.get(self.api_key_env) or PLACEHOLDER_KEY
            client = sdk.AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s)
            self._client = (loop, client)
        return self._client[1]

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

    async def complete(
        self, system: str, messages: list[ChatMessage], tools: list[Tool], options: CallOptions
    ) -> ModelReply:
        """One streamed call, retried on provider trouble. Raises InfrastructureError when it persists."""
        request = self._request(system, messages, tools, options)
        t0 = time.monotonic()
        reply, attempts = await with_retries(
            lambda: self._stream(request), self.retry, inspect=inspect_error,
            what=f"openai:{self.model}", seed=options.seed,
        )
        reply.latency_s = time.monotonic() - t0
        reply.attempts = attempts
        return reply

    async def _stream(self, request: dict[str, Any]) -> ModelReply:
        client = self._sdk_client()
        sent = time.monotonic()
        create = client.chat.completions.create
        stream = await create(**fit_to_signature(create, request))
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        ttft: float | None = None
        reply = ModelReply(text="", tool_calls=[], model=self.model)
        async for chunk in stream:
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
