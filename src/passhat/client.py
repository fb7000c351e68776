"""The episode of a trial, seen from another process: for Python agents that passhat runs as a command,
in an isolated process, or that serve requests as an HTTP service.

``RemoteEpisode`` has the same surface as the in-process :class:`passhat.episode.Episode` an agent
function receives (``instruction``, ``policy``, ``tools``, ``await call()``, ``await say()``,
``report_usage()`` …), so one agent function runs unchanged in-process, under ``--isolate process``, or in
a service of your own::

    from passhat.client import RemoteEpisode

    async def handle(start: dict) -> dict:          # e.g. the body of passhat's POST to your service
        async with RemoteEpisode.connect(start) as episode:
            reply = await my_agent(episode)
        return {"reply": reply}

A planned timeout or lost response really withholds the answer; ``call`` gives up after ``tool_timeout_s``
(the start message's suggestion) and returns a timeout error, as a production client would.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from passhat.episode import ToolResult
from passhat.localhttp import AnswerTimeout, shared_client, suitable
from passhat.serve.protocol import TrialStart

START_ENV = "PASSHAT_START"
"""The whole start message as JSON (``cmd:`` agents also get each field as ``PASSHAT_<FIELD>``)."""


class TrialOver(Exception):
    """The trial has ended (time or step limit, or it was stopped): no more calls are accepted."""


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the trial lists it (the same fields as :meth:`passhat.tools.Tool.spec`)."""

    name: str
    description: str
    parameters: dict[str, Any]
    kind: str

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters, "kind": self.kind}

    def openai_spec(self) -> dict[str, Any]:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


def start_from_env(environ: Mapping[str, str] | None = None) -> TrialStart:
    """The start message passhat put in the environment of a ``cmd:`` or isolated agent."""
    env = os.environ if environ is None else environ
    raw = env.get(START_ENV)
    if not raw:
        raise RuntimeError(f"{START_ENV} is not set: this program is meant to be started by passhat "
                           "(--agent cmd:... or --isolate process)")
    return TrialStart.model_validate_json(raw)


class RemoteEpisode:
    """A trial's episode over passhat's HTTP tool API (see module docstring)."""

    def __init__(self, start: TrialStart | Mapping[str, Any], *, tool_timeout_s: float | None = None) -> None:
        self.start = start if isinstance(start, TrialStart) else TrialStart.model_validate(start)
        s = self.start
        self.case_id, self.trial, self.seed, self.domain = s.case_id, s.trial, s.seed, s.domain
        self.tags = dict(s.tags)
        self.instruction, self.policy, self.identity = s.instruction, s.policy, s.identity
        self.tool_timeout_s = tool_timeout_s if tool_timeout_s is not None else s.tool_timeout_s
        """How long a tool call may go unanswered before the client gives up (a production client's timeout);
        by default what the start message suggests."""
        self.model_urls = dict(s.model_urls)
        """The model relay's base URL per provider name (``--agent-model-relay``), as in-process."""
        self.replies: list[str] = []
        self.user_left = False
        self._auth = {"authorization": f"Bearer {s.token}"}
        urls = (s.tools_url, s.user_url, s.usage_url)
        self._local = all(suitable(url) for url in urls)
        """Plain HTTP (the tool server on this machine, as passhat runs it): the event loop's shared small client
        (passhat/localhttp.py); otherwise httpx2, verifying TLS where a URL asks for it."""
        self._httpx: Any = None
        if not self._local:
            import httpx2

            tls = any(url.startswith("https:") for url in urls)
            self._httpx = httpx2.AsyncClient(headers=self._auth, verify=tls,
                                             timeout=httpx2.Timeout(self.tool_timeout_s, connect=10.0))
        self._tools: list[RemoteTool] | None = None
        self._sending: set[Any] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def connect(cls, start: TrialStart | Mapping[str, Any] | None = None, **kw: Any) -> RemoteEpisode:
        """From a start message, or from the environment when ``start`` is ``None``."""
        return cls(start_from_env() if start is None else start, **kw)

    async def __aenter__(self) -> RemoteEpisode:
        await self.load_tools()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Wait for usage reports still in flight, then close the connection."""
        pending = [asyncio.wrap_future(f) if isinstance(f, concurrent.futures.Future) else f for f in self._sending]
        await asyncio.gather(*pending, return_exceptions=True)
        if self._httpx is not None:
            await self._httpx.aclose()  # the shared small client stays open for the loop's next episode

    def remaining_s(self) -> float:
        """Seconds left before passhat stops the trial."""
        return max(0.0, self.start.deadline - time.time())

    async def load_tools(self) -> list[RemoteTool]:
        """Fetch the tool list once (``tools`` needs it)."""
        self._loop = asyncio.get_running_loop()
        if self._tools is None:
            data = self._json(await self._request("GET", self.start.tools_url))
            self._tools = [RemoteTool(t["name"], t.get("description", ""), t.get("parameters", {}), t.get("kind", ""))
                           for t in data["tools"]]
        return self._tools

    @property
    def tools(self) -> list[RemoteTool]:
        if self._tools is None:
            raise RuntimeError("call `await episode.load_tools()` (or use `async with RemoteEpisode.connect(...)`) first")
        return list(self._tools)

    def tool_specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self.tools]

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call a tool; errors come back as ``ToolResult(ok=False, ...)``, a withheld answer as a timeout."""
        try:
            response = await self._request("POST", f"{self.start.tools_url}/{name}", {} if arguments is None else arguments)
        except _Timeout:
            return ToolResult(ok=False, error=f"timeout: no response from {name} after {self.tool_timeout_s:g}s",
                              withheld=True)
        data = self._json(response, allow=(200, 409))
        if data.get("ok"):
            return ToolResult(ok=True, content=data.get("result"))
        if data.get("limit"):
            raise TrialOver(data.get("error") or data["limit"])
        return ToolResult(ok=False, error=data.get("error"))

    async def say(self, text: str) -> str | None:
        """Send a message to the user; their answer, or ``None`` once they have left."""
        self.replies.append(text)
        if self.user_left:
            return None
        data = self._json(await self._request("POST", self.start.user_url, {"text": text}, patient=True), allow=(200, 409))
        if data.get("limit"):
            raise TrialOver(data.get("error") or data["limit"])
        answer = data.get("reply")
        if answer is None:
            self.user_left = True
        return answer if isinstance(answer, str) else None

    def finish(self, reply: str) -> None:
        """Kept for compatibility with in-process agents: the final reply is what the agent returns."""
        self.replies.append(reply)

    async def send_usage(self, **usage: Any) -> None:
        """Report one model call (``model``, ``input_tokens``, ``output_tokens``, ``cost``, ``latency_s`` …)."""
        self._json(await self._request("POST", self.start.usage_url, usage), allow=(200, 409))

    def report_usage(self, **usage: Any) -> None:
        """Report one model call without waiting (the in-process ``Episode.report_usage`` is synchronous, and
        agents call it from sync code and from worker threads); :meth:`aclose` waits for the reports."""
        coro = self.send_usage(**usage)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a plain-function agent's thread
            if self._loop is None:
                coro.close()
                raise RuntimeError("report_usage: the episode is not connected yet") from None
            self._sending.add(asyncio.run_coroutine_threadsafe(coro, self._loop))
            return
        task = loop.create_task(coro)
        self._sending.add(task)

    async def _request(self, method: str, url: str, body: Any = None, *, patient: bool = False) -> _Response:
        """One request to the trial's endpoint, answered within the tool timeout (``patient``: however long it
        takes); a timeout raises :class:`_Timeout`."""
        if self._httpx is None:
            try:
                # passhat's tool server closes a kept-alive connection silently only before reading a request (idle,
                # evicted at its cap): a call that meets such a close never reached it, so it is sent again
                answer = await (await shared_client()).request(
                    method, url, json_body=body, headers=self._auth, timeout=None if patient else self.tool_timeout_s,
                    resend_if_stale=True)
            except AnswerTimeout:
                raise _Timeout from None
            return _Response(answer.status, answer.body, url)
        import httpx2

        try:
            got = await self._httpx.request(method, url, json=body,
                                            timeout=None if patient else httpx2.USE_CLIENT_DEFAULT)
        except httpx2.TimeoutException:
            raise _Timeout from None
        return _Response(got.status_code, got.content, url)

    def _json(self, response: _Response, allow: tuple[int, ...] = (200,)) -> dict[str, Any]:
        if response.status == 410:
            raise TrialOver("the trial is over")
        if response.status not in allow:
            text = response.body[:500].decode("utf-8", "replace")
            raise RuntimeError(f"passhat answered {response.status} to {response.url}: {text}")
        data = json.loads(response.body)
        if not isinstance(data, dict):
            raise RuntimeError(f"passhat answered {response.url} with something other than a JSON object")
        return data


@dataclass(frozen=True)
class _Response:
    status: int
    body: bytes
    url: str


class _Timeout(Exception):
    """No answer within the request's timeout (a withheld answer, for a tool call)."""


__all__ = ["RemoteEpisode", "RemoteTool", "TrialOver", "start_from_env"]
