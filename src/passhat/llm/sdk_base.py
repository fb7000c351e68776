"""What the provider adapters share: credentials, one SDK client per event loop, retried streaming calls.

Each adapter only says how to build its client, its request and how to read its stream; the retry,
timing and credential rules are the same for every provider, so they live here once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from typing import Any

from passhat.errors import InfrastructureError, PasshatError
from passhat.llm.chat import CallOptions, ChatMessage, ModelReply
from passhat.llm.ratelimit import Limiter, estimate_tokens
from passhat.llm.retry import IncompleteAnswer, RetryPolicy, inspect_error, with_retries
from passhat.outages import CircuitBreaker
from passhat.tools import Tool

PLACEHOLDER_KEY = "not-needed"
"""Sent when a --base-url server needs no key (the SDKs refuse an empty one)."""


class AnswerTooLarge(InfrastructureError):
    """The provider's answer went past :data:`~passhat.capped_http.MAX_ANSWER_BYTES`: not retried (a provider
    that sent this much once is broken, not busy), and not the agent's doing."""


class SdkChat:
    """Base of the SDK-backed chat models; subclasses set ``provider`` and implement the three hooks."""

    provider = "?"
    key_hint = "a compatible server"

    def __init__(
        self, model: str, *, base_url: str | None = None, api_key_env: str, retry: RetryPolicy | None = None,
        timeout_s: float = 120.0,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        self.breaker = CircuitBreaker()
        """Shared by every call of this model in the run: a dead endpoint is found once, not per trial."""
        self.limiter: Limiter | None = None
        """The model's rate limit, shared by the run (set by the run's setup from ``--rate-limit``)."""
        self._client: tuple[asyncio.AbstractEventLoop, Any] | None = None
        if not os.environ.get(api_key_env) and base_url is None:
            raise PasshatError(f"{self.provider}:{model}: set {api_key_env}, or pass --base-url for {self.key_hint}")

    def describe(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "base_url": self.base_url,
                "api_key_env": self.api_key_env, "retry": dataclasses.asdict(self.retry)}

    def _make_client(self, api_key: str) -> Any:
        raise NotImplementedError

    def _http_client(self, sdk: Any) -> Any:
        """The SDK's own default HTTP client, reading each answer within
        :data:`~passhat.capped_http.MAX_ANSWER_BYTES` (the SDKs buffer an SSE line however long it grows)."""
        from passhat import capped_http  # httpx2: loaded with the SDK's client, not before a run's first trial

        what = f"{self.provider}:{self.model}"

        def too_large() -> Exception:
            return AnswerTooLarge(f"{what}: the provider's answer is larger than "
                                  f"{capped_http.MAX_ANSWER_BYTES // 2**20} MB; not read further")

        return sdk.DefaultAsyncHttpxClient(**capped_http.capped_options(too_large))

    def _request(self, system: str, messages: list[ChatMessage], tools: list[Tool], o: CallOptions) -> dict[str, Any]:
        raise NotImplementedError

    async def _stream(self, request: dict[str, Any]) -> ModelReply:
        raise NotImplementedError

    def _sdk_client(self) -> Any:
        """One client per event loop (an HTTP client must not outlive the loop it was made on)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client[0] is not loop:
            self._client = (loop, self._make_client(os.environ.get(self.api_key_env) or PLACEHOLDER_KEY))
        return self._client[1]

    async def complete(
        self, system: str, messages: list[ChatMessage], tools: list[Tool], options: CallOptions
    ) -> ModelReply:
        """One streamed call, retried on provider trouble. Raises InfrastructureError when it persists."""
        request = self._request(system, messages, tools, options)
        t0 = time.monotonic()
        what = f"{self.provider}:{self.model}"
        reply, attempts = await with_retries(
            lambda: self._limited(request, what), self.retry, inspect=inspect_error,
            what=what, seed=options.seed, breaker=self.breaker,
        )
        reply.latency_s = time.monotonic() - t0
        reply.attempts = attempts
        return reply

    async def _limited(self, request: dict[str, Any], what: str) -> ModelReply:
        """One attempt, after the rate limit's permit (every attempt is a request the provider counts)."""
        limiter = self.limiter
        if limiter is None:
            return await self._attempt(request, what)
        self._sdk_client()  # the first call imports the SDK and builds the client: before its turn, not after
        reserved = await limiter.acquire(what, estimate_tokens(request))
        try:
            reply = await self._attempt(request, what)
        except Exception as exc:
            seen = inspect_error(exc)
            status = getattr(exc, "status_code", None)
            limiter.failed(reserved, status=status if isinstance(status, int) else None,
                           retry_after=seen[1] if seen is not None else None)
            raise
        used = reply.input_tokens + reply.output_tokens
        limiter.finished(reserved, used or None)
        return reply

    async def _attempt(self, request: dict[str, Any], what: str) -> ModelReply:
        """:meth:`_stream`, with JSON nested past the parser's stack in the provider's stream (the SDKs decode
        each event with ``json.loads``) said as what it is, and retried like any other unreadable answer; an
        answer past the cap as :class:`AnswerTooLarge`, also where an SDK wrapped it in a connection error."""
        try:
            return await self._stream(request)
        except RecursionError:
            raise IncompleteAnswer(f"{what}: the provider's stream holds JSON nested too deeply to parse") from None
        except Exception as exc:
            cause: BaseException | None = exc
            while cause is not None and not isinstance(cause, AnswerTooLarge):
                cause = cause.__cause__
            if cause is not None and cause is not exc:
                raise cause from None
            raise
