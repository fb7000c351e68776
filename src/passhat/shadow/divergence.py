"""Where a candidate trial's writes and reply diverge from production's conversation.

**Writes** are the calls of ``write`` tools that took effect (production: returned, or ran and lost their
answer; candidate: ``committed``), with arguments as the tool takes them. They are paired in the
candidate's order: first each with an unpaired production write of the same tool and the same arguments
(``same``); what is left, with the first unpaired production write of the same tool (``different``, naming
the arguments that differ); then the candidate's leftovers are ``extra`` and production's ``missing``.

**Identifiers.** The sandbox generates its own ids (``R-55821``) where production had others, so a later
write or reply that quotes one would differ for no fault of the candidate. When two paired writes'
results differ at the same place in an identifier-like string (no spaces, 3 to 64 characters, a digit
among them, not a decimal amount), the candidate's is taken as production's from then on: it is replaced
in the candidate's later arguments and in its reply before they are compared. Words (a status, a reason)
and amounts (``"259.00"``) are not identifiers: taking the candidate's for production's would hide a
later write that repeats a wrong one.

**Duplicates**: one side made the same write (tool and arguments) more than once — the blind retry after
a lost response. **Reply**: the sets of numbers in the final replies, normalised by value (``118.50`` is
``118.5``, ``1,234`` is ``1234``; an id's digits count, leading zeros kept: ``R-0001`` gives ``0001``), differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from passhat.shadow.cases import Call
from passhat.tools.cassette import argument_diff

IDENTIFIER = re.compile(r"\S{3,64}")
AMOUNT = re.compile(r"[-+]?[\d,]*\.\d+")
NUMBER = re.compile(r"(?<![\d.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")


@dataclass
class WriteComparison:
    """One trial's writes against production's."""

    same: list[tuple[Call, Call]] = field(default_factory=list)
    """(production, candidate) pairs with equal arguments."""
    different: list[tuple[Call, Call, dict[str, Any], list[str]]] = field(default_factory=list)
    """(production, candidate, candidate's arguments with ids mapped, differing fields)."""
    extra: list[Call] = field(default_factory=list)
    missing: list[Call] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    """Candidate identifier → production's, learned from paired writes' results."""


def _learn(candidate: Any, production: Any, aliases: dict[str, str]) -> None:
    """Identifier-like strings that differ at the same place in two results: the candidate's stands for production's."""
    if isinstance(candidate, dict) and isinstance(production, dict):
        for key in candidate.keys() & production.keys():
            _learn(candidate[key], production[key], aliases)
    elif isinstance(candidate, list) and isinstance(production, list):
        for c, p in zip(candidate, production, strict=False):
            _learn(c, p, aliases)
    elif (isinstance(candidate, str) and isinstance(production, str) and candidate != production
          and _identifier(candidate) and _identifier(production)):
        aliases.setdefault(candidate, production)


def _identifier(text: str) -> bool:
    """Like a generated id: 3–64 characters without spaces, a digit among them, not a decimal amount."""
    return (IDENTIFIER.fullmatch(text) is not None and any(ch.isdigit() for ch in text)
            and AMOUNT.fullmatch(text) is None)


def substitute(value: Any, aliases: dict[str, str]) -> Any:
    """``value`` with every candidate identifier replaced by production's (longest first)."""
    if not aliases:
        return value
    if isinstance(value, str):
        for mine in sorted(aliases, key=len, reverse=True):
            if mine in value:
                value = value.replace(mine, aliases[mine])
        return value
    if isinstance(value, dict):
        return {k: substitute(v, aliases) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, aliases) for v in value]
    return value


def differing_fields(production: dict[str, Any], candidate: dict[str, Any]) -> list[str]:
    """The top-level arguments whose values differ (numbers by value)."""
    return [k for k in sorted(production.keys() | candidate.keys())
            if k not in production or k not in candidate or argument_diff(production[k], candidate[k])]


def compare_writes(production: Sequence[Call], candidate: Sequence[Call]) -> WriteComparison:
    """Pair the candidate's writes with production's (see the module docstring)."""
    out = WriteComparison()
    free = list(production)
    left: list[Call] = []
    for c in candidate:
        args = substitute(c.arguments, out.aliases)
        p = next((p for p in free if p.tool == c.tool and not argument_diff(p.arguments, args)), None)
        if p is None:
            left.append(c)
            continue
        free.remove(p)
        out.same.append((p, c))
        _learn(c.result, p.result, out.aliases)
    for c in left:  # aliases learned from different pairs may make a later write equal after all
        args = substitute(c.arguments, out.aliases)
        p = next((p for p in free if p.tool == c.tool and not argument_diff(p.arguments, args)), None)
        if p is not None:
            free.remove(p)
            out.same.append((p, c))
            _learn(c.result, p.result, out.aliases)
            continue
        p = next((p for p in free if p.tool == c.tool), None)
        if p is None:
            out.extra.append(c)
            continue
        free.remove(p)
        out.different.append((p, c, args, differing_fields(p.arguments, args)))
        _learn(c.result, p.result, out.aliases)
    out.missing = free
    return out


def duplicates(calls: Sequence[Call]) -> list[tuple[Call, int]]:
    """Writes (tool and arguments) made more than once, each with how many times, in first-seen order."""
    seen: dict[str, list[Call]] = {}
    for c in calls:
        seen.setdefault(f"{c.tool}|{json.dumps(c.arguments, sort_keys=True, default=str)}", []).append(c)
    return [(group[0], len(group)) for group in seen.values() if len(group) > 1]


def reply_numbers(text: str | None) -> list[str]:
    """The numbers a reply mentions, normalised by value, sorted."""
    out = set()
    for m in NUMBER.finditer(text or ""):
        digits = m.group(0).replace(",", "")
        if len(digits) > 1 and digits[0] == "0" and digits[1] != ".":
            out.add(digits)  # an identifier's digits (R-0001): leading zeros are part of it
            continue
        try:
            out.add(format(Decimal(digits).normalize(), "f"))
        except InvalidOperation:  # pragma: no cover - the pattern only matches digits
            continue
    return sorted(out, key=lambda s: (len(s), s))
