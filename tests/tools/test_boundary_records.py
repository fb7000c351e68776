"""A call's record is made without validation (tools/boundary.py ``_Call.record``): it must be the model validation
would make from the same values, whatever way the call went."""

from __future__ import annotations

import asyncio
from typing import Any

from passhat.tools import Fault, ToolBoundary, ToolCall, ToolContext
from passhat.world import World


def test_every_kind_of_call_is_recorded_as_validation_would_make_it(notes_domain: Any) -> None:
    world = World.restore(notes_domain.image("default"), 1)
    faults = [Fault(tool="add_note", kind="drop_response", on_call=2), Fault(tool="add_note", kind="timeout", on_call=3),
              Fault(tool="list_notes", kind="malformed", field="body", value="{value}!", on_call=2),
              Fault(tool="list_notes", kind="error", message="503", on_call=3),
              Fault(tool="list_notes", kind="latency", seconds=0.001, on_call=4)]
    b = ToolBoundary(notes_domain.tool_list(), ToolContext(world, identity="alice"), forbidden=["wipe_audit"],
                     faults=faults)
    calls: list[tuple[str, Any]] = [
        ("add_note", {"title": "x"}), ("add_note", {"title": "y"}), ("add_note", {"title": "z"}), ("fly", {}),
        ("add_note", {"title": 5}), ("add_note", [1, 2]), ("get_note", {"note_id": "N-2"}),
        ("get_note", {"note_id": "N-9"}), ("broken", {}), ("wipe_audit", {}),
    ] + [("list_notes", {})] * 4

    async def run() -> None:
        for name, args in calls:
            await b.call(name, args)

    asyncio.run(run())
    statuses = {c.status for c in b.calls}
    assert statuses >= {"ok", "fault", "unknown_tool", "invalid_arguments", "denied", "tool_error", "exception",
                        "forbidden"}
    assert any(c.changed_rows for c in b.calls) and any(c.hidden_result for c in b.calls)
    for rec in b.calls:
        validated = ToolCall.model_validate(rec.model_dump())
        assert rec == validated
        assert rec.model_dump_json() == validated.model_dump_json()
        assert list(rec.__dict__) == list(ToolCall.model_fields)
        assert {type(v) for v in rec.__dict__.values()} == {type(v) for v in validated.__dict__.values()}
    rec = b.calls[0]
    rec.abandoned, rec.abandoned_when = True, "after"  # a transport marks it afterwards (Episode.abandon)
    assert rec.abandoned and "abandoned" in rec.model_fields_set


def test_a_result_is_what_the_json_round_trip_makes_of_it() -> None:
    """Results are copied without the round trip where that is a copy; whatever they hold, the agent and the record
    get what ``json.loads(json.dumps(...))`` gives."""
    import json
    import random

    from passhat.tools.boundary import _jsonable, _plain

    rng = random.Random(3)
    scalars: list[Any] = ["a", "é", 1, -2**70, 1.5, float("inf"), True, False, None, (1, 2), b"x", 1 + 0j]

    def value(depth: int) -> Any:
        roll = rng.random()
        if depth > 3 or roll < 0.4:
            return rng.choice(scalars)
        if roll < 0.7:
            return {rng.choice(["a", "b", "c", 1, None, True]): value(depth + 1) for _ in range(rng.randint(0, 4))}
        return [value(depth + 1) for _ in range(rng.randint(0, 4))]

    for _ in range(3000):
        v = value(0)
        try:
            expected = json.loads(json.dumps(v, default=_plain))
        except TypeError:  # a key json.dumps refuses: the boundary's round trip raises the same
            continue
        copied = _jsonable(v)
        assert repr(copied) == repr(expected)  # repr tells 1 from "1" and a tuple from a list
        if isinstance(v, dict | list):
            assert copied is not v
