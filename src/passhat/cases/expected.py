"""A case's reference solution, run once per process: the expected state of ``expect_state: reference``.

The reference calls go through the same tool boundary as a trial's (the case's allowed and forbidden
tools, argument validation, identity-scoped permissions; no faults) on a fresh world of the case's
fixture, as the user's identity. What they change is a :class:`Diff` against the fixture, the shape a
trial's ``World.diff()`` has, so grading compares two diffs and costs what the changes cost, not what
the database does. The result is cached per domain and per everything of the case that can change it,
so every trial of a case (and every re-grade) shares one run.
"""

from __future__ import annotations

import asyncio
import json
import threading
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from passhat.seeding import derive_seed
from passhat.tools import ToolBoundary, ToolCall, ToolContext
from passhat.world import Diff

if TYPE_CHECKING:
    from passhat.cases.model import Case
    from passhat.domain import Domain

REFERENCE_SEED = derive_seed("reference")
"""The reference's world seed: fixed, so generated IDs are the same in every process."""
T = TypeVar("T")

_cache: weakref.WeakKeyDictionary[Domain, dict[str, Diff]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class ReferenceFailed(Exception):
    """A reference call that could not run as written; ``field`` is its place in the case file."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def _cache_key(case: Case) -> str:
    return json.dumps([case.fixture, case.user.identity, case.user.facts, case.allowed_tools, case.forbidden_tools,
                       [c.model_dump(mode="json") for c in case.reference]], sort_keys=True, default=str)


def expected_state(case: Case, domain: Domain) -> Diff | None:
    """The row changes the case's reference calls make on its fixture (``None`` without a reference).

    Raises :class:`ReferenceFailed` when a call fails; the suite loader turns that into a ``CaseError``.
    """
    if not case.reference:
        return None
    key = _cache_key(case)
    with _lock:
        cached = _cache.setdefault(domain, {}).get(key)
    if cached is None:
        cached = _run_to_completion(lambda: _run_reference(case, domain))
        with _lock:
            _cache[domain][key] = cached
    return cached


async def _run_reference(case: Case, domain: Domain) -> Diff:
    world = domain.restore(case.fixture, REFERENCE_SEED)
    try:
        ctx = ToolContext(world, identity=case.user.identity, facts=dict(case.user.facts))
        boundary = ToolBoundary(domain.tool_list(), ctx, allowed=case.allowed_tools, forbidden=case.forbidden_tools,
                                user_tools=domain.user_tools.values())
        for i, call in enumerate(case.reference):
            record = await boundary.call(call.tool, call.args, by=call.by)
            if call.fails and record.status in ("tool_error", "exception", "denied"):
                continue  # refused as the case says it is; its writes were rolled back
            if record.ok == call.fails or not record.ok:
                raise ReferenceFailed(*_problem(i, record, case, domain))
        return world.diff()
    finally:
        world.close()


def _problem(i: int, record: ToolCall, case: Case, domain: Domain) -> tuple[str, str]:
    """Where in the case file a failed reference call is, and what would be valid."""
    field = f"reference.{i}"
    if record.ok:  # marked `fails`
        return f"{field}.fails", (f"the reference call {record.tool} is marked `fails` but succeeded on fixture "
                                  f"{case.fixture!r}; remove `fails: true`, or fix the call")
    if record.status == "unknown_tool":
        tools = domain.user_tools if record.by == "user" else domain.tools
        whose = "user tools" if record.by == "user" else "tools"
        names = ", ".join(sorted(tools)) or "none"
        return f"{field}.tool", f"unknown tool {record.tool!r}; domain {domain.name!r} has these {whose}: {names}"
    if record.status in ("forbidden", "not_allowed"):
        return f"{field}.tool", f"{record.error}; a reference may call only tools the case allows"
    if record.status == "invalid_arguments":
        tool = (domain.user_tools if record.by == "user" else domain.tools)[record.tool]
        params = ", ".join(tool.arguments.model_fields) or "no arguments"
        return f"{field}.args", f"{record.error}; {record.tool} takes: {params}"
    who = f" as {case.user.identity}" if case.user.identity else ""
    return field, (f"the reference call {record.tool} failed on fixture {case.fixture!r}{who} ({record.status}): "
                   f"{record.error}; a reference must run as written")


def _run_to_completion(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from synchronous code, also when an event loop is already running in this thread
    (``evaluate_async``, a trial): then it runs on a loop of its own in a helper thread."""
    async def main() -> T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(1, thread_name_prefix="passhat-reference") as pool:
        return pool.submit(asyncio.run, main()).result()
