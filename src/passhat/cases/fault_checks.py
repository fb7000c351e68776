"""Planned faults that could never act on a trial, found before any trial runs.

A fault that cannot fire still reads as tested: the case file plans it, and without this check the run
would record the fault's name on a call it did nothing to. Each problem below is knowable from the case
and its domain alone; what only a trial's own result can show (the field absent from *this* answer) is
flagged on the call instead (``ToolCall.fault_not_applied``).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from passhat.errors import CaseError
from passhat.tools.faults import Fault
from passhat.tools.result_fields import type_name

if TYPE_CHECKING:  # CannotFire is raised by assertion kinds too, which the case model imports
    from passhat.cases.model import Case


class CannotFire(CaseError):
    """A planned fault or assertion that no trial could exercise (lint code ``cannot-fire``)."""


UNUSED_OPTIONS: dict[str, tuple[str, ...]] = {
    "drop_response": ("field", "value"),
    "timeout": ("field", "value"),
    "error": ("field", "value"),
    "malformed": ("message", "seconds"),
    "latency": ("message", "field", "value"),
}
"""Options each kind ignores: given anyway, they say the author meant another kind (``field`` on a timeout)."""
USED_BY = {"field": "malformed", "value": "malformed", "message": "error, timeout and drop_response",
           "seconds": "latency (the delay), timeout, drop_response and error (the simulated wait)"}


def fault_problems(case: Case, file: str, domain: Any) -> list[CaseError]:
    """Every fault of ``case`` that no trial could exercise, in order (faults on unknown tools are left to
    the unknown-tool check)."""
    out: list[CaseError] = []
    for i, fault in enumerate(case.faults):
        tool = domain.tools.get(fault.tool)
        if tool is None:
            continue
        out += _problems(case, file, i, fault, tool)
    return out


def _problems(case: Case, file: str, i: int, fault: Fault, tool: Any) -> list[CaseError]:
    at = f"faults.{i}"
    out: list[CaseError] = []
    for option in UNUSED_OPTIONS[fault.kind]:
        if option in fault.model_fields_set:
            out.append(CannotFire(file, f"{at}.{option}", f"a {fault.kind} fault does not use `{option}` "
                                                         f"(it is for {USED_BY[option]}); remove it or change `kind`"))
    if fault.kind == "malformed":
        out += _malformed(file, at, fault, tool)
    if fault.kind == "latency" and fault.seconds == 0:
        out.append(CannotFire(file, f"{at}.seconds", "a latency fault of 0 seconds delays nothing; give the delay, "
                                                     "e.g. seconds: 2"))
    if fault.tool in case.forbidden_tools or (case.allowed_tools is not None and fault.tool not in case.allowed_tools):
        why = "forbidden" if fault.tool in case.forbidden_tools else "not in allowed_tools"
        out.append(CannotFire(file, f"{at}.tool", f"{fault.tool} is {why} in this case, so every call of it is refused "
                                                  "before a fault could act; allow the tool or remove the fault"))
    if fault.on_call > case.limits.max_steps:
        out.append(CannotFire(file, f"{at}.on_call", f"call {fault.on_call} of {fault.tool} can never happen: the case "
                                                     f"allows at most {case.limits.max_steps} tool calls "
                                                     "(limits.max_steps)"))
    shadow = _shadowed_by(case.faults[:i], fault)
    if shadow is not None:
        out.append(CannotFire(file, at, f"every call it plans ({_calls(fault)} of {fault.tool}) is already taken by "
                                        f"faults.{shadow} (the first fault planned for a call is the one applied)"))
    return out


def _malformed(file: str, at: str, fault: Fault, tool: Any) -> list[CaseError]:
    if not fault.field:
        return [CaseError(file, f"{at}.field", "a malformed fault needs the result field to corrupt")]
    fields = tool.result_fields
    if fields is None or fault.field in fields:
        return []  # the result's names are open (checked on every call instead), or the field is declared
    declared = type_name(tool.func)
    if not fields:
        return [CannotFire(file, f"{at}.field", f"{tool.name} returns {declared}, which has no fields to corrupt")]
    close = difflib.get_close_matches(fault.field, sorted(fields), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return [CannotFire(file, f"{at}.field", f"{tool.name}'s result ({declared}) has no field {fault.field!r}{hint}; "
                                            f"its fields: {', '.join(sorted(fields))}")]


def _shadowed_by(earlier: list[Fault], fault: Fault) -> int | None:
    """The index of an earlier fault on the same tool when, together, earlier faults cover every call this
    one plans (reported against the first of them)."""
    start, end = fault.on_call, fault.on_call + fault.times  # calls [start, end), as intervals: `times` may be large
    covering = [(f.on_call, f.on_call + f.times, j) for j, f in enumerate(earlier)
                if f.tool == fault.tool and f.on_call < end and start < f.on_call + f.times]
    reached = start
    for lo, hi, _ in sorted(covering):
        if lo > reached:
            break
        reached = max(reached, hi)
    return min(j for *_, j in covering) if covering and reached >= end else None


def _calls(fault: Fault) -> str:
    return f"call {fault.on_call}" if fault.times == 1 else f"calls {fault.on_call}–{fault.on_call + fault.times - 1}"


__all__ = ["CannotFire", "fault_problems"]
