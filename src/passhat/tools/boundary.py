"""The tool boundary: every call goes permission → validation → fault → tool → record.

Nothing an agent sends can crash the run: unknown tools, bad arguments, denials, business errors and
tool exceptions all come back to the agent as tool errors and are recorded with a status.

A call is atomic where the world can make it so: the tool runs inside the world's call scope
(``World.call_scope()``: a savepoint on the trial's SQLite connection, a transaction on its PostgreSQL
one), kept when it returns and undone when it raises (``ctx.fail()`` and ``ctx.deny()`` included), so a
write made before the error never outlives the call — the agent was told the call failed, and the world
agrees. The change log rolls back with it, so ``World.diff()`` shows only what completed calls did. A
call served by a process of its own (an MCP server) commits there: its scope undoes nothing. A
``drop_response`` fault hides the answer of a call that *completed*, so its write stays. The calls of one
trial share one connection; their tool bodies therefore run one at a time (matters only for async tools
that an agent calls concurrently).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat._trusted import trusted
from passhat.models.finite import STRICT_FLOATS
from passhat.tools.context import PermissionDenied, ToolContext, ToolFailure
from passhat.tools.declare import Tool, ToolKind
from passhat.tools.faults import Fault, FaultKind, corrupt, timeout_message
from passhat.tools.jsondata import as_json_data
from passhat.world.kind import NO_SCOPE
from passhat.world.sqlite_kind import Savepoint

Caller = Literal["agent", "user"]
"""Who made a call: the agent, or the user with a tool of the user's own (a domain's ``user_tools``)."""
CallStatus = Literal[
    "ok", "unknown_tool", "invalid_arguments", "not_allowed", "forbidden", "denied", "tool_error",
    "exception", "fault", "after_end",
]
REFUSED_BEFORE_COUNTED: frozenset[str] = frozenset({"after_end", "unknown_tool", "forbidden", "not_allowed",
                                                    "invalid_arguments"})
"""The statuses :meth:`ToolBoundary._dispatch` gives before it counts a call of the tool toward its faults'
``on_call``: such a call never meets a planned fault (keep in step with ``_dispatch``)."""


class ToolCall(BaseModel):
    """One tool call as the harness saw it: what was asked, what happened, what the agent got."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
    step: int
    """1-based position of the call in the trial."""
    tool: str
    """The tool's name as the caller called it."""
    by: Caller = Field("agent", exclude_if=lambda by: by == "agent")
    """Who made it: the agent, or the user with a tool of the user's own (dual control: the user toggles a
    setting on their phone). Left out of records when it is the agent."""
    arguments: Any
    """The arguments as the caller sent them."""
    status: CallStatus
    """``ok``; ``unknown_tool``; ``invalid_arguments``; ``not_allowed`` (not in the case's allowed list);
    ``forbidden`` (in the case's forbidden list); ``denied`` (identity-scoped permission); ``tool_error``
    (business error); ``exception`` (the tool raised); ``fault`` (a planned fault answered); ``after_end``
    (refused: a tool that ends the episode was called before)."""
    kind: ToolKind | None = None
    """``read`` or ``write``, as the tool is declared (None for a tool the domain does not have)."""
    idempotent: bool = False
    """The tool declares a repeat with the same arguments harmless (``@tool(idempotent=True)``)."""
    result: Any = None
    """What the agent received."""
    error: str | None = None
    """Error text the agent received, if any."""
    fault: str | None = None
    """The fault injected on this call, if any."""
    fault_kind: FaultKind | None = None
    """Its kind: over HTTP and MCP a ``timeout`` or ``drop_response`` really withholds the answer."""
    fault_not_applied: str | None = None
    """Why the planned fault changed nothing on this call, when it did not: a ``malformed`` field this result
    does not hold (or a replacement equal to the value), a ``malformed`` or ``drop_response`` fault on a call
    that failed anyway. The trial did not test what the fault was planned to test; the run warns about it."""
    committed: bool = False
    """True when the tool ran to completion (for ``drop_response``, even though the agent never saw it)."""
    abandoned: bool = False
    """The agent's client gave up (closed the request) before the answer was sent: the agent never saw it.
    Only agents that run elsewhere can do this; it explains, say, a retry of a write that had succeeded."""
    abandoned_when: Literal["before", "during", "after"] | None = None
    """When the client went away, relative to the tool: ``before`` it ran (the request was read, the client
    was gone when the server got to it; the tool ran anyway, as a real server's would), ``during`` the run,
    or ``after`` it (the answer was ready but nobody was left to send it to)."""
    abandoned_at: float | None = None
    """When the client went away, in seconds since the trial started (the clock of ``started_at``)."""
    hidden_result: Any = None
    """The real result when a fault hid or changed it."""
    changed_rows: list[tuple[str, list[Any]]] | None = None
    """Rows the call wrote, as (table, primary key), in the order first written (at most 200); ``[]`` when it
    wrote none or failed (its writes were rolled back); ``None`` when the tool did not run, or the record
    predates the field. Failure attribution points a wrong or missing row at the call that wrote it."""
    started_at: float = 0.0
    """Seconds since the trial started."""
    duration_ms: float = 0.0
    """How long the tool ran, in milliseconds."""
    traceback: str | None = None
    """The traceback when the tool raised (status ``exception``): for the domain's author, never shown to the agent."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def signature(self) -> str:
        """Tool name plus canonical arguments, used for loop and duplicate detection."""
        return f"{self.tool}|{_canonical(self.arguments)}"


_canonical = json.JSONEncoder(sort_keys=True, default=str).encode
"""``json.dumps(value, sort_keys=True, default=str)`` without making an encoder per call (the rules grader asks
for every call's signature in every trial)."""


class _Call:
    """A call while the boundary handles it: its :class:`ToolCall` fields as they are decided, made into the record
    once the call has ended (:meth:`record`)."""

    __slots__ = ("step", "tool", "by", "arguments", "started_at", "status", "kind", "idempotent", "result", "error",
                 "fault", "fault_kind", "fault_not_applied", "committed", "hidden_result", "changed_rows", "traceback")

    def __init__(self, step: int, tool: str, by: Caller, arguments: Any, started_at: float) -> None:
        self.step, self.tool, self.by, self.arguments, self.started_at = step, tool, by, arguments, started_at
        self.status: CallStatus = "ok"
        self.kind: ToolKind | None = None
        self.idempotent = False
        self.result: Any = None
        self.error: str | None = None
        self.fault: str | None = None
        self.fault_kind: FaultKind | None = None
        self.fault_not_applied: str | None = None
        self.committed = False
        self.hidden_result: Any = None
        self.changed_rows: list[tuple[str, list[Any]]] | None = None
        self.traceback: str | None = None

    def record(self, duration_ms: float) -> ToolCall:
        """The call's record, made without validation (passhat/_trusted.py): every value is the boundary's own, of
        its field's type (the agent's name made a ``str``, its arguments JSON data, results JSON data, statuses and
        kinds from their vocabularies, ``changed_rows`` as the world kinds declare it). Validating it whole costs
        ~37 K instructions, a record validated at the start (as before) ~25 K and then ~3.5 K for each field set
        on it, eight a call; this ~20 K (tests/tools/test_boundary_records.py holds it to validation)."""
        return trusted(ToolCall, {
            "step": self.step, "tool": self.tool, "by": self.by, "arguments": self.arguments, "status": self.status,
            "kind": self.kind, "idempotent": self.idempotent, "result": self.result, "error": self.error,
            "fault": self.fault, "fault_kind": self.fault_kind, "fault_not_applied": self.fault_not_applied,
            "committed": self.committed, "abandoned": False, "abandoned_when": None, "abandoned_at": None,
            "hidden_result": self.hidden_result, "changed_rows": self.changed_rows, "started_at": self.started_at,
            "duration_ms": duration_ms, "traceback": self.traceback,
        })


class ToolBoundary:
    """Dispatches calls for one trial and keeps the call log."""

    def __init__(
        self,
        tools: Iterable[Tool],
        ctx: ToolContext,
        *,
        allowed: Iterable[str] | None = None,
        forbidden: Iterable[str] = (),
        faults: Iterable[Fault] = (),
        t0: float | None = None,
        user_tools: Iterable[Tool] = (),
    ) -> None:
        self.tools: Mapping[str, Tool] = {t.name: t for t in tools}
        self.user_tools: Mapping[str, Tool] = {t.name: t for t in user_tools}
        """Tools only the user calls (``call(..., by="user")``), on the user's part of the world; an agent
        calling one by name gets ``unknown_tool``. Neither the case's permissions nor its faults apply to them."""
        self.ctx = ctx
        self.allowed = set(allowed) if allowed is not None else None
        self.forbidden = set(forbidden)
        self.faults = list(faults)
        self.calls: list[ToolCall] = []
        self._per_tool: Counter[str] = Counter()
        self._t0 = time.monotonic() if t0 is None else t0
        self._one_at_a_time = asyncio.Lock()
        self.ended_by: str | None = None
        """The tool whose call ended the episode (``ends_episode``), if one did."""
        self._tallied = self._by_agent = self._failed = 0

    def tally(self) -> tuple[int, int]:
        """(calls the agent made, calls that failed) so far. Asked before and after every call, so each record
        is counted once, when it first appears (a scan of every call each time made a trial quadratic)."""
        calls = self.calls
        if self._tallied < len(calls):
            for rec in calls[self._tallied:]:
                self._by_agent += rec.by == "agent"
                self._failed += rec.status != "ok"
            self._tallied = len(calls)
        return self._by_agent, self._failed

    def _fault_for(self, name: str, number: int) -> Fault | None:
        return next((f for f in self.faults if f.tool == name and f.applies_to(number)), None)

    async def call(self, name: str, arguments: Any, by: Caller = "agent") -> ToolCall:
        """Run one call through the boundary and record it (arguments as JSON data: tools/jsondata.py).
        ``by="user"``: the user calls one of :attr:`user_tools`."""
        start = time.monotonic()
        name, arguments = str(name), as_json_data(arguments)
        call = _Call(len(self.calls) + 1, name, by, arguments, start - self._t0)
        try:
            await self._dispatch(call)
        finally:
            record = call.record((time.monotonic() - start) * 1000)
            self.calls.append(record)
        return record

    async def _dispatch(self, rec: _Call) -> None:
        if self.ended_by is not None:
            rec.status = "after_end"
            rec.error = f"the conversation has ended ({self.ended_by} was called); no more calls are accepted"
            return
        tools = self.user_tools if rec.by == "user" else self.tools
        tool = tools.get(rec.tool)
        if tool is None:
            rec.status, rec.error = "unknown_tool", f"unknown tool {rec.tool!r}; available: {sorted(tools)}"
            return
        rec.kind, rec.idempotent = tool.kind, tool.idempotent
        if rec.by == "user":  # the user's own device: the case's permissions and faults are about the agent's tools
            args = _arguments(tool, rec)
            if args is not None:
                self.ctx.world.clock.tick()
                await self._run(tool, args, rec)
            return
        if rec.tool in self.forbidden:
            rec.status, rec.error = "forbidden", f"permission denied: {rec.tool} is forbidden in this task"
            return
        if self.allowed is not None and rec.tool not in self.allowed:
            rec.status, rec.error = "not_allowed", f"permission denied: {rec.tool} is not allowed in this task"
            return
        args = _arguments(tool, rec)
        if args is None:
            return
        self._per_tool[rec.tool] += 1
        fault = self._fault_for(rec.tool, self._per_tool[rec.tool])
        self.ctx.world.clock.tick()
        if fault is not None:
            rec.fault, rec.fault_kind = fault.describe(), fault.kind
            if fault.kind in ("timeout", "error"):
                self.ctx.world.clock.advance(fault.seconds)
                rec.status = "fault"
                rec.error = timeout_message(fault) if fault.kind == "timeout" else (
                    fault.message or f"error: {rec.tool} failed (503 service unavailable)")
                return
            if fault.kind == "latency":
                await asyncio.sleep(fault.seconds)
                self.ctx.world.clock.advance(fault.seconds)
        await self._run(tool, args, rec)
        if tool.ends_episode and rec.committed:
            self.ended_by = tool.name  # even if its answer is lost below: the hand-off happened
        if fault is None or fault.kind == "latency":
            return
        if rec.status != "ok":  # nothing to lose or corrupt: the agent got the call's own error
            rec.fault_not_applied = f"the call failed ({rec.status}), so there was no answer for the fault to change"
        elif fault.kind == "drop_response":
            rec.hidden_result, rec.result = rec.result, None
            rec.status, rec.error = "fault", timeout_message(fault)
        elif fault.kind == "malformed":
            corrupted, why_not = corrupt(rec.result, fault)
            if why_not is None:
                rec.hidden_result, rec.result = rec.result, corrupted
            rec.fault_not_applied = why_not

    async def _run(self, tool: Tool, args: BaseModel, rec: _Call) -> None:
        kwargs = {name: getattr(args, name) for name in type(args).model_fields}
        if tool.is_async or self._one_at_a_time.locked():
            async with self._one_at_a_time:
                await self._body(tool, kwargs, rec)
        else:  # a plain function runs to its end without giving the loop a turn: no other call can come between
            await self._body(tool, kwargs, rec)

    async def _body(self, tool: Tool, kwargs: dict[str, Any], rec: _Call) -> None:
        """The tool itself inside the world's call scope: kept when it returns, undone when it raises. One call's
        at a time (:meth:`_run`): the calls of a trial share the world's connection and its savepoints."""
        mark = self.ctx.world.change_mark()  # None: this world cannot say which rows a call wrote
        rec.changed_rows = [] if mark is not None else None  # (PostgreSQL logs what a server writes too)
        scope = NO_SCOPE if tool.remote else self.ctx.world.call_scope()  # a remote tool commits on its own
        try:
            out = tool.func(self.ctx, **kwargs)
            if tool.is_async:
                out = await out
            result = _jsonable(out)
        except PermissionDenied as exc:
            scope.undo()
            rec.status, rec.error = "denied", f"permission denied: {exc}"
        except ToolFailure as exc:
            scope.undo()
            rec.status, rec.error = "tool_error", str(exc)
        except Exception as exc:  # a tool bug must not crash the run; the agent sees an error
            scope.undo()
            rec.status, rec.error = "exception", f"{type(exc).__name__}: {exc}"
            rec.traceback = traceback.format_exc()
        except BaseException:  # cancelled mid-call (the trial's time limit): the call did not happen
            scope.undo()
            raise
        else:
            try:
                scope.keep()
            except Exception as exc:  # the commit itself failed (a deferred constraint): nothing was written
                scope.undo()
                rec.status, rec.error = "exception", f"{type(exc).__name__} when committing: {exc}"
                rec.traceback = traceback.format_exc()
                return
            rec.status, rec.result, rec.committed = "ok", result, True
            if mark is not None:
                rec.changed_rows = self.ctx.world.changed_since(mark)


def _arguments(tool: Tool, rec: _Call) -> BaseModel | None:
    """The call's arguments validated against the tool's model, or None with the call recorded as the agent's
    (or user's) bad request: arguments that are not a JSON object, or do not fit the tool's parameters."""
    if not isinstance(rec.arguments, dict):
        rec.status, rec.error = "invalid_arguments", "arguments must be a JSON object"
        return None
    try:
        return tool.arguments.model_validate(rec.arguments)
    except ValidationError as exc:
        rec.status, rec.error = "invalid_arguments", _invalid(exc)
        return None


def _invalid(exc: ValidationError) -> str:
    return "invalid arguments: " + "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors())


CALL_SAVEPOINT = Savepoint.NAME
"""The savepoint name of a call on a SQLite world (``world/sqlite_kind.py``)."""


def _jsonable(value: Any) -> Any:
    """Tool results are JSON data; round-trip once so the agent and the record see the same thing. A pydantic
    model or dataclass becomes its fields (what its annotation declares: ``Tool.result_fields``)."""
    try:
        return _copy(value, 0)
    except _NotPlain:
        return json.loads(json.dumps(value, default=_plain))


class _NotPlain(Exception):
    """A value :func:`_copy` leaves to the JSON round trip."""


_SCALARS = frozenset({str, int, float, bool, type(None)})
_COPY_DEPTH = 32


def _copy(value: Any, depth: int) -> Any:
    """What the JSON round trip gives, for the values where that is a copy: dicts with string keys, lists and
    scalars of exactly those types (most tool results, copied in a fraction of the round trip's time).
    Anything else, or nesting past :data:`_COPY_DEPTH` (a cycle), raises :class:`_NotPlain`."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if depth < _COPY_DEPTH:
        if kind is dict:
            out = {}
            for k, v in value.items():
                if type(k) is not str:
                    raise _NotPlain
                out[k] = v if type(v) in _SCALARS else _copy(v, depth + 1)
            return out
        if kind is list:
            return [v if type(v) in _SCALARS else _copy(v, depth + 1) for v in value]
    raise _NotPlain


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)




def not_reached(faults: Iterable[Fault], calls: Iterable[ToolCall]) -> list[tuple[Fault, int]]:
    """Each planned fault that acted on none of a trial's calls, with how many calls of its tool the agent made
    that counted toward it (fewer than ``on_call``). Such a trial did not test the fault, whatever its verdict:
    the case may plan it on a call its task never needs, or the agent took another way."""
    calls = list(calls)
    fired = {c.fault for c in calls if c.fault is not None}
    return [(fault, sum(1 for c in calls if c.tool == fault.tool and c.by == "agent"
                        and c.status not in REFUSED_BEFORE_COUNTED))
            for fault in faults if fault.describe() not in fired]


__all__ = ["REFUSED_BEFORE_COUNTED", "CallStatus", "Caller", "ToolBoundary", "ToolCall", "not_reached"]
