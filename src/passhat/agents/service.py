"""``--agent http://HOST:PORT/PATH``: an agent that runs as an HTTP service, in any language.

For each trial passhat POSTs the start message (:class:`passhat.serve.TrialStart`: the task, the
policy, the trial's tool and MCP URLs, its token and deadline) and waits for the JSON answer
``{"reply": ..., "usage": ...}`` until the trial's time limit. A service that cannot be reached at all is
an infrastructure error (outcome ``error``: nothing was measured); one that answers with an error status,
something that is not JSON, or drops the connection mid-answer has failed the trial.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from passhat.agents.external import ExternalAgent
from passhat.errors import AgentCrashed, InfrastructureError, PasshatError
from passhat.localhttp import LocalClient, suitable
from passhat.outages import CircuitBreaker
from passhat.serve import AgentReply, TrialEndpoint, TrialStart

CONNECT_TIMEOUT_S = 10.0
MAX_REPLY_BYTES = 16 * 1024 * 1024
"""The largest answer read from an agent service: a reply and its usage are kilobytes; an endless or
huge body is the agent's failure at this size, not the harness's memory growing until it dies (an audit's
endless body reached 660 MB in 10 s)."""
EXCERPT = 500
"""Characters of a bad answer kept as evidence."""


def is_service_spec(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


class ServiceAgent(ExternalAgent):
    """POSTs each trial's start message to ``url`` and takes the JSON reply."""

    kind = "http"

    def __init__(self, url: str, **kw: Any) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PasshatError(f"--agent {url!r}: expected an http(s) URL such as http://127.0.0.1:8000/agent")
        super().__init__(**kw)
        self.url = url
        self._client: Any = None
        self._local = LocalClient() if suitable(url) else None
        """The small client for a plain-HTTP service (passhat/localhttp.py: a tenth of httpx2's CPU per trial);
        httpx2 (``_client``) for https or through a proxy."""
        self.breaker = CircuitBreaker(threshold=4)
        """A service that keeps refusing connections fails the remaining trials at once (docs/design/007)."""

    def _http(self) -> Any:
        if self._client is None:
            import httpx2

            tls = self.url.startswith("https:")  # no CA bundle to load for a plain-HTTP service behind a proxy
            self._client = httpx2.AsyncClient(limits=httpx2.Limits(max_connections=None, max_keepalive_connections=64),
                                              verify=tls)
        return self._client

    async def run(self, endpoint: TrialEndpoint) -> AgentReply:
        start = endpoint.start()
        self.breaker.check(f"agent service {self.url}")
        status, body = await (self._post_local(start) if self._local is not None else self._post_httpx(start))
        self.breaker.success()
        text = body[:4 * EXCERPT].decode("utf-8", "replace")
        if status >= 400:
            raise AgentCrashed(f"agent service {self.url} answered HTTP {status}: {text[:EXCERPT]}")
        try:
            return AgentReply.model_validate_json(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(body)"
            raise AgentCrashed(f"agent service {self.url} answered something other than {{\"reply\": ..., \"usage\": ...}}: "
                               f"{where}: {first['msg']}; body: {text[:EXCERPT]!r}") from None

    async def _post_local(self, start: TrialStart) -> tuple[int, bytes]:
        """POST the start message with the small client (plain HTTP, no proxy); the status and the body."""
        from passhat import localhttp

        assert self._local is not None
        # the runner's time limit ends the wait; the answer's deadline only guards against a limit-less episode
        self._local.connect_timeout = min(CONNECT_TIMEOUT_S, start.time_limit_s)
        try:
            answer = await self._local.request("POST", self.url, body=start.model_dump_json().encode(),
                                               headers={"content-type": "application/json"},
                                               timeout=start.time_limit_s + 5, max_bytes=MAX_REPLY_BYTES)
        except localhttp.ConnectFailed as exc:
            self.breaker.failure(f"ConnectError: {exc}")
            raise InfrastructureError(f"agent service {self.url} cannot be reached: ConnectError: {exc}") from exc
        except localhttp.AnswerTooLarge as exc:
            self.breaker.success()
            raise AgentCrashed(self._too_large(str(exc) if "declared" in str(exc) else
                                               f"more than {MAX_REPLY_BYTES:,} bytes and still sending")) from None
        except localhttp.HttpError as exc:
            self.breaker.success()  # it answered, then failed: the agent's failure, not an outage
            raise AgentCrashed(f"agent service {self.url} failed mid-answer: {type(exc).__name__}: {exc}") from exc
        return answer.status, answer.body

    async def _post_httpx(self, start: TrialStart) -> tuple[int, bytes]:
        """POST the start message with httpx2 (https, or a proxy to go through); the status and the body."""
        import httpx2

        timeout = httpx2.Timeout(start.time_limit_s + 5, connect=min(CONNECT_TIMEOUT_S, start.time_limit_s))
        try:
            return await self._post(start.model_dump(mode="json"), timeout)
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            self.breaker.failure(f"{type(exc).__name__}: {exc}")
            raise InfrastructureError(f"agent service {self.url} cannot be reached: {type(exc).__name__}: {exc}") from exc
        except httpx2.HTTPError as exc:
            self.breaker.success()  # it answered, then failed: the agent's failure, not an outage
            raise AgentCrashed(f"agent service {self.url} failed mid-answer: {type(exc).__name__}: {exc}") from exc

    async def _post(self, message: dict[str, Any], timeout: Any) -> tuple[int, bytes]:
        """POST the start message; the status and the body, read up to :data:`MAX_REPLY_BYTES` (beyond:
        :class:`AgentCrashed`, and the connection is dropped rather than drained)."""
        async with self._http().stream("POST", self.url, json=message, timeout=timeout) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
                raise AgentCrashed(self._too_large(f"declared {int(declared):,} bytes"))
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise AgentCrashed(self._too_large(f"more than {MAX_REPLY_BYTES:,} bytes and still sending"))
                chunks.append(chunk)
            return response.status_code, b"".join(chunks)

    def _too_large(self, how: str) -> str:
        return (f"agent service {self.url} answered a body larger than {MAX_REPLY_BYTES // (1024 * 1024)} MB "
                f"({how}); an answer is {{\"reply\": ..., \"usage\": ...}}, kilobytes")

    async def aclose(self) -> None:
        if self._local is not None:
            await self._local.aclose()
            self._local = LocalClient()  # the agent can serve another run
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        await super().aclose()

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "url": self.url}


__all__ = ["ServiceAgent", "is_service_spec"]
