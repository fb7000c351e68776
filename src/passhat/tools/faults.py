"""Planned failures at the tool boundary.

Each fault fires on the Nth call of a named tool (and optionally the following ones). The set
mirrors what breaks in production: a write that committed but whose response was lost, a timeout,
an error status, a field returned in the wrong shape, and added latency.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)

FaultKind = Literal["drop_response", "timeout", "error", "malformed", "latency"]


class Fault(BaseModel):
    """One planned failure. In a case file: ``{tool: create_ticket, kind: drop_response, on_call: 1}``.

    A fault no trial could exercise is refused when the suite loads: on a tool the case forbids or leaves out
    of ``allowed_tools``, on a call past ``limits.max_steps``, on calls an earlier fault already takes, a
    ``latency`` of 0 s, or with an option its kind does not use (``field`` on a ``timeout``). A fault that no
    call of a trial reached (the agent never made that call of the tool) did not test that trial: the run
    warns, once per case and fault, and ``summary.json`` counts such trials per case (``faults_not_reached``),
    which ``passhat show`` and the report repeat."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    tool: str
    """Name of the tool whose calls are affected."""
    kind: FaultKind
    """``drop_response``: the tool runs and commits, the agent gets a timeout. ``timeout``: the tool does
    not run, the agent gets a timeout. ``error``: the tool does not run, the agent gets an error.
    ``malformed``: the tool runs, one field of its result comes back in the wrong shape. ``latency``: the
    tool runs after a delay."""
    on_call: int = Field(1, ge=1)
    """Which call of the tool (1-based) the fault starts on."""
    times: int = Field(1, ge=1)
    """How many consecutive calls, starting at ``on_call``, are affected."""
    message: str | None = None
    """Error text the agent sees (``error``, ``timeout``, ``drop_response``)."""
    field: str | None = None
    """``malformed``: the result field to corrupt, wherever it appears (in every row of a list). When the tool
    declares its result (a ``TypedDict``, pydantic model or dataclass return annotation), a field it cannot
    hold is bad input when the suite loads; otherwise a result without it leaves the call flagged
    ``fault_not_applied`` and the run warns: that trial did not test the fault."""
    value: Any = None
    """``malformed``: the replacement; a string may use ``{value}`` for the original, e.g. ``"{value}元"``."""
    seconds: float = Field(0.0, ge=0)
    """``latency``: real delay before the tool runs; ``timeout``/``drop_response``: simulated wait."""

    def applies_to(self, call_number: int) -> bool:
        """Whether this fault fires on the given (1-based) call of its tool."""
        return self.on_call <= call_number < self.on_call + self.times

    def describe(self) -> str:
        """Short human description for records and reports."""
        return f"{self.kind} on {self.tool} call {self.on_call}" + (f"×{self.times}" if self.times > 1 else "")


def timeout_message(fault: Fault) -> str:
    """What an agent sees when a call times out (real clients see no body at all)."""
    return fault.message or f"timeout: no response from {fault.tool} after {fault.seconds or 30:g}s"


def corrupt(result: Any, fault: Fault) -> tuple[Any, str | None]:
    """Replace ``fault.field`` wherever it appears in ``result``.

    Returns (new result, why nothing changed): the reason is ``None`` when at least one value really
    changed, else it says why the fault did not apply — the field is not in this result, or the
    replacement equals what was there — so the record never claims a fault that tested nothing."""
    if fault.field is None:
        raise ValueError("a malformed fault needs `field`")
    out = copy.deepcopy(result)
    found = changed = 0

    def walk(node: Any) -> None:
        nonlocal found, changed
        if isinstance(node, dict):
            for key in list(node):
                if key == fault.field:
                    original = node[key]
                    value = fault.value
                    node[key] = value.format(value=original) if isinstance(value, str) else value
                    found += 1
                    changed += node[key] != original or type(node[key]) is not type(original)
                else:
                    walk(node[key])
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(out)
    if not found:
        return out, f"no field {fault.field!r} in the result ({_shape(result)})"
    if not changed:
        return out, f"the replacement equals the original value of {fault.field!r}"
    return out, None


def _shape(result: Any) -> str:
    """The result's top-level fields, or what it is, for the reason a fault did not apply."""
    if isinstance(result, dict):
        return "fields: " + (", ".join(map(str, list(result)[:12])) or "none") + (" …" if len(result) > 12 else "")
    if isinstance(result, list):
        return "an empty list" if not result else f"a list of {len(result)}, first: {_shape(result[0])}"
    return f"a {type(result).__name__}, which has no fields"


def planned_faults(faults: Sequence[Fault]) -> dict[str, list[str]]:
    """A case's entry for its planned faults in the manifest (``CaseMeta.faults``): each as a call's ``fault``
    names it, which is what a summary needs to count the trials that never reached one from the records
    alone. Nothing for a case that plans none, so that its manifest entry is what it was before."""
    return {"faults": [f.describe() for f in faults]} if faults else {}
