"""Required calls and ordering rules that no trial could satisfy or exercise, found before any trial runs.

A ``required_tools`` entry the case itself refuses, or whose ``args`` name a parameter the tool does not take
(or a value its schema cannot accept), fails every trial of every agent: the run would measure the case file,
not the agent. An ``order`` rule on a tool the case refuses never acts on a trial — a refused ``then`` is
never a successful call to check, a refused ``first`` turns the rule into "never call ``then``" — so it reads
as checked while it checks nothing. Each is knowable from the case and its domain alone.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from passhat.cases.fault_checks import CannotFire
from passhat.errors import CaseError

if TYPE_CHECKING:
    from passhat.cases.model import Case


class Contradiction(CaseError):
    """A required call the case itself refuses: the case can never pass (lint code ``contradiction``)."""


def refused(case: Case, tool: str) -> str | None:
    """Why every call of ``tool`` is refused by the case's own lists, or ``None`` when it may be called."""
    if tool in case.forbidden_tools:
        return "forbidden"
    if case.allowed_tools is not None and tool not in case.allowed_tools:
        return "not in allowed_tools"
    return None


def call_problems(case: Case, file: str, domain: Any) -> list[CaseError]:
    """Every required call and ordering rule of ``case`` no trial could satisfy or exercise, in order (unknown
    tools are left to the unknown-tool check)."""
    out: list[CaseError] = []
    for i, req in enumerate(case.required_tools):
        tool = domain.tools.get(req.tool)
        if tool is None:
            continue
        why = refused(case, req.tool)
        if why is not None:
            out.append(Contradiction(file, f"required_tools.{i}.tool", f"{req.tool!r} is required but {why} in this "
                                                                       "case: the case can never pass"))
        out += _args_problems(file, f"required_tools.{i}.args", req.tool, req.args, tool.parameters)
    for i, rule in enumerate(case.order):
        if rule.first not in domain.tools or rule.then not in domain.tools:
            continue
        if (why := refused(case, rule.then)) is not None:
            out.append(CannotFire(file, f"order.{i}.then", f"{rule.then} is {why} in this case, so no call of it can "
                                                           "succeed for the rule to check; remove the rule"))
        elif (why := refused(case, rule.first)) is not None:
            out.append(CannotFire(file, f"order.{i}.first", f"{rule.first} is {why} in this case, so it can never "
                                                            f"come first: the rule only says never to call "
                                                            f"{rule.then}; allow {rule.first}, or forbid {rule.then}"))
    return out


def _args_problems(file: str, at: str, name: str, args: dict[str, Any], schema: Any) -> list[CaseError]:
    """Arguments a required call names that no valid call of the tool can have: a parameter the tool's schema
    does not take, or a value of a JSON type the parameter does not accept (calls with invalid arguments never
    succeed, so such a call is never made)."""
    if not isinstance(schema, dict):
        return []
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    out: list[CaseError] = []
    for key, value in args.items():
        if key not in properties:
            if schema.get("additionalProperties", True) is False:
                close = difflib.get_close_matches(key, sorted(properties), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                takes = ", ".join(sorted(properties)) or "none"
                out.append(CannotFire(file, f"{at}.{key}", f"{name} takes no parameter {key!r}{hint}, so no call of it "
                                                           f"can have it; its parameters: {takes}"))
            continue
        accepted = _json_types(properties[key])
        if accepted is not None and not _fits(value, accepted):
            out.append(CannotFire(file, f"{at}.{key}", f"{value!r} is not a value {name}'s parameter {key!r} accepts "
                                                       f"({' or '.join(sorted(accepted))}), so no valid call can have "
                                                       "it (a string is not a number)"))
    return out


def _json_types(schema: Any) -> set[str] | None:
    """The JSON types a parameter's schema accepts, or ``None`` when it does not say (no ``type`` anywhere)."""
    if not isinstance(schema, dict):
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
        return set(declared)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        types: set[str] = set()
        for branch in branches:
            found = _json_types(branch)
            if found is None:
                return None
            types |= found
        return types
    return None


def _fits(value: Any, accepted: set[str]) -> bool:
    """Whether a required value can equal an argument of one of these JSON types, as the trajectory grader
    compares them (numbers by value, booleans as 1/0: ``passhat.world.diff.same_value``)."""
    if isinstance(value, (bool, int, float)):
        return bool(accepted & {"integer", "number", "boolean"})
    kinds = {str: "string", type(None): "null", list: "array", dict: "object"}
    return kinds.get(type(value), "") in accepted


__all__ = ["Contradiction", "call_problems", "refused"]
