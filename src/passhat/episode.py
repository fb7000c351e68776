"""The agent's whole window onto a trial.

An agent never touches the world directly: it calls tools and talks to the user through the episode,
which is how the harness sees every side effect and records a trajectory no agent can forget to report.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.models.finite import STRICT_FLOATS

if TYPE_CHECKING:  # annotations only: an agent in a process of its own (the isolated worker) never loads the boundary
    from passhat.tools import Tool, ToolBoundary, ToolCall


class LimitExceeded(Exception):
    """A trial budget ran out. The episode records it; further calls keep raising."""

    def __init__(self, reason: EndReason, message: str) -> None:
        self.reason = reason
        super().__init__(message)


EndReason = Literal[
    "completed", "user_stopped", "ended_by_tool", "step_limit", "time_limit", "cost_limit", "error_limit",
    "agent_error", "harness_error",
]


class Message(BaseModel):
    """One message of the conversation."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
    role: Literal["user", "agent"]
    """Who said it."""
    text: str
    """What was said."""
    at: float = 0.0
    """Seconds since the trial started."""


class Usage(BaseModel):
    """What the agent spent, as it reported it (model-driven agents report per model call)."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
    input_tokens: int = 0
    """Prompt tokens, over every model call."""
    output_tokens: int = 0
    """Completion tokens, over every model call."""
    cost: float = 0.0
    """Cost in USD at the run's prices (0 when the model is not priced)."""
    model_calls: int = 0
    """Model calls reported."""
    time_to_first_token_s: float | None = None
    """Time to the first token of the first model call, when the agent reports it."""
    models: list[str] = Field(default_factory=list)
    """The models called, each once, in first-called order."""


class ModelCall(BaseModel):
    """One model call an agent reported: the span a trace shows for it."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
    model: str | None = None
    """The model called."""
    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""
    cost: float = 0.0
    """Cost in USD at the run's prices."""
    started_at: float = 0.0
    """Seconds since the trial started."""
    latency_s: float | None = None
    """Seconds from the request to the whole reply."""
    time_to_first_token_s: float | None = None
    """Seconds to the first token, when streamed."""
    prompt_hash: str | None = None
    """Hash of the prompt template/tool schema version, for tracing which prompt produced what."""
    error: str | None = None
    """Why the call failed, when it did."""


class ToolResult(BaseModel):
    """What an agent gets back from :meth:`Episode.call`."""

    ok: bool
    content: Any = None
    error: str | None = None
    withheld: bool = False
    """No answer came back (a planned ``timeout`` or ``drop_response``): in-process the agent gets the
    timeout text at once; over HTTP and MCP the request really hangs until the client gives up."""
    step: int | None = None
    """The call's position in the trial (its ``ToolCall.step``)."""

    def text(self) -> str:
        """A compact text form for feeding back to a model."""
        import json

        if not self.ok:
            return f"ERROR: {self.error}"
        return json.dumps(self.content, ensure_ascii=False, default=str)


class UserSimulator(Protocol):
    """Plays the user: answers the agent's messages; ``None`` means the user has left."""

    async def reply(self, agent_text: str) -> str | None: ...


class Episode:
    """One trial as the agent sees it."""

    def __init__(
        self,
        *,
        case_id: str,
        domain: str,
        trial: int,
        seed: int,
        instruction: str,
        policy: str,
        identity: str | None,
        boundary: ToolBoundary,
        user: UserSimulator,
        max_steps: int,
        max_cost: float | None,
        t0: float | None = None,
        time_limit_s: float | None = None,
        tags: dict[str, str] | None = None,
        max_tool_errors: int | None = None,
    ) -> None:
        self.case_id = case_id
        self.tags: dict[str, str] = dict(tags or {})
        """The case's tags (its public metadata, like ``case_id``): visible to the agent, so a case must
        not put the answer there. Agents may use them to route or log; graders do not depend on it."""
        self.domain = domain
        """Name of the domain (reference agents pick their playbook by it)."""
        self.trial = trial
        self.seed = seed
        """Seed for the agent's own randomness (sampling, flakiness); stable per trial."""
        self.instruction = instruction
        self.policy = policy
        self.identity = identity
        self._boundary = boundary
        self._user = user
        self._max_steps = max_steps
        self._max_cost = max_cost
        self._max_tool_errors = max_tool_errors
        self._t0 = time.monotonic() if t0 is None else t0
        self.messages: list[Message] = [Message(role="user", text=instruction)]
        self.usage = Usage()
        self.model_calls: list[ModelCall] = []
        self.user_left = False
        self.limit: LimitExceeded | None = None
        self.stop_requested = asyncio.Event()
        """Set when a budget runs out or a tool ends the episode, so an agent running elsewhere (a service,
        a process) is stopped at once: it cannot receive :class:`LimitExceeded` as an in-process agent does."""
        self.time_limit_s = time_limit_s
        """The case's time limit (``None``: no limit known to the episode)."""
        self.model_urls: dict[str, str] = {}
        """The model relay's base URL per provider name, with ``--agent-model-relay NAME=URL`` (empty without):
        build your SDK client on it (``AsyncOpenAI(base_url=episode.model_urls["openai"])``) and a provider
        that stalls is recorded as an outage (``error``), not as your time limit (docs/agents.md)."""
        self.isolation: dict[str, str] | None = None
        """How the agent's program was confined, set by agents passhat starts (``cmd:``, ``--isolate process``):
        ``{"kind": "namespaces" | "fallback", "details": ...}``; ``None``: the agent ran in passhat's process
        or was not started by passhat (a service)."""

    @property
    def deadline(self) -> float | None:
        """When the trial's time runs out, in ``time.monotonic()`` seconds (``None`` without a limit)."""
        return None if self.time_limit_s is None else self._t0 + self.time_limit_s

    def remaining_s(self) -> float | None:
        """Seconds left before the time limit (never negative; ``None`` without a limit). Retries and
        request timeouts are cut to fit it, so an outage ends as an infrastructure error, not a time limit."""
        deadline = self.deadline
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def _stop(self, reason: EndReason, message: str) -> LimitExceeded:
        self.limit = LimitExceeded(reason, message)
        self.stop_requested.set()
        return self.limit

    @property
    def ended_by(self) -> str | None:
        """The tool whose call ended the episode (``ends_episode``, e.g. a transfer to a human), if any."""
        return self._boundary.ended_by

    @property
    def tools(self) -> list[Tool]:
        """The tools the agent may try (all tools of the domain; permissions are enforced per call)."""
        return list(self._boundary.tools.values())

    def slowest_answer_s(self) -> float | None:
        """How long a tool of this trial can take to answer: the longest planned ``latency`` (0 without one)
        when every tool only uses the sandbox (a plain function) and the user is scripted; ``None`` when one
        may wait on the world outside for as long as it likes (an ``async`` tool: a command, a network call;
        a model-played user). Transports suggest their clients' timeout from it (``serve/endpoint.py``)."""
        if any(t.is_async for t in self._boundary.tools.values()) or not getattr(self._user, "answers_at_once", False):
            return None  # over MCP the user is a tool too: a model-played user's reply takes a model call
        return max((f.seconds for f in self._boundary.faults if f.kind == "latency"), default=0.0)

    def tool_specs(self) -> list[dict[str, Any]]:
        """JSON descriptions of the tools (name, description, parameters, kind)."""
        return [t.spec() for t in self.tools]

    @property
    def calls(self) -> list[ToolCall]:
        return list(self._boundary.calls)

    def _elapsed(self) -> float:
        return time.monotonic() - self._t0

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call a tool. Errors come back as ``ToolResult(ok=False, error=...)``; they never raise,
        except :class:`LimitExceeded` once the step budget is spent."""
        if self.limit is not None:
            raise self.limit
        if self._boundary.tally()[0] >= self._max_steps:
            raise self._stop("step_limit", f"step limit reached: at most {self._max_steps} tool calls")
        self._count_errors()
        rec = await self._boundary.call(name, {} if arguments is None else arguments)
        if self._boundary.ended_by is not None:
            self.stop_requested.set()
        self._count_errors(answered=rec)
        withheld = rec.status == "fault" and rec.fault_kind in ("timeout", "drop_response")
        return ToolResult(ok=rec.ok, content=rec.result, error=rec.error, withheld=withheld, step=rec.step)

    def _count_errors(self, answered: ToolCall | None = None) -> None:
        """Stop the trial once ``max_tool_errors`` calls (the agent's and the user's) have failed. The call
        that reaches the budget is answered; the next one is refused, as τ²-bench ends the conversation."""
        limit = self._max_tool_errors
        if limit is None or self.limit is not None:
            return
        failed = self._boundary.tally()[1]
        if failed >= limit:
            self._stop("error_limit", f"tool error limit reached: {failed} failed calls (at most {limit})")
            if answered is None:
                raise self.limit  # type: ignore[misc]

    def abandon(self, step: int, gone_at: float) -> None:
        """Record that the agent's client gave up on call ``step`` before its answer was sent (transports
        call this; the trajectory then shows the agent never saw that answer). ``gone_at`` is when the client
        went away, in ``time.monotonic()`` seconds: the record says whether that was before, during or after
        the call, and when."""
        at = gone_at - self._t0
        for rec in self._boundary.calls:
            if rec.step == step:
                end = rec.started_at + rec.duration_ms / 1000
                rec.abandoned, rec.abandoned_at = True, round(at, 6)
                rec.abandoned_when = "before" if at < rec.started_at else "during" if at <= end else "after"

    async def say(self, text: str) -> str | None:
        """Send a message to the user and get their answer (``None`` when the user has left)."""
        self.messages.append(Message(role="agent", text=text, at=self._elapsed()))
        if self.user_left or self.ended_by is not None:  # after a hand-off nobody is listening
            return None
        answer = await self._user.reply(text)
        if answer is None:
            self.user_left = True
            return None
        self.messages.append(Message(role="user", text=answer, at=self._elapsed()))
        return answer

    def finish(self, reply: str) -> None:
        """Record the agent's final reply (an agent may also just return it)."""
        self.messages.append(Message(role="agent", text=reply, at=self._elapsed()))

    def report_usage(
        self,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost: float = 0.0,
        model: str | None = None,
        time_to_first_token_s: float | None = None,
        latency_s: float | None = None,
        prompt_hash: str | None = None,
        error: str | None = None,
    ) -> None:
        """Add one model call's usage (call it when the call ends). Exceeding the case's cost budget
        raises :class:`LimitExceeded`; a value that is not a finite number ≥ 0 raises ``ValueError`` (the
        agent's bug, which must not make the run folder unreadable)."""
        for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens), ("cost", cost),
                            ("latency_s", latency_s), ("time_to_first_token_s", time_to_first_token_s)):
            if value is None and name in ("latency_s", "time_to_first_token_s"):
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"report_usage: {name} must be a finite number ≥ 0, got {value!r}")
        now = self._elapsed()
        self.model_calls.append(ModelCall(
            model=model, input_tokens=input_tokens, output_tokens=output_tokens, cost=cost,
            started_at=max(0.0, now - (latency_s or 0.0)), latency_s=latency_s,
            time_to_first_token_s=time_to_first_token_s, prompt_hash=prompt_hash, error=error,
        ))
        u = self.usage
        u.input_tokens += input_tokens
        u.output_tokens += output_tokens
        u.cost += cost
        u.model_calls += 1
        if model and model not in u.models:
            u.models.append(model)
        if time_to_first_token_s is not None and u.time_to_first_token_s is None:
            u.time_to_first_token_s = time_to_first_token_s
        if self._max_cost is not None and u.cost > self._max_cost:
            raise self._stop("cost_limit", f"cost limit exceeded: {u.cost:.4f} > {self._max_cost}")

    @property
    def agent_messages(self) -> list[str]:
        return [m.text for m in self.messages if m.role == "agent"]

    @property
    def reply(self) -> str:
        """The agent's last message to the user ('' if it said nothing)."""
        msgs = self.agent_messages
        return msgs[-1] if msgs else ""
