"""Coverage of a suite by split, tag and tool: where the cases are, and which tools no case exercises.

A tool is *exercised* by a case when the case makes its use (or non-use) part of the verdict: it is
required (``required_tools``), ordered (``order``), has a planned fault (``faults``) or is forbidden
(``forbidden_tools``: the refusal is checked). Merely being available, or listed in ``allowed_tools``,
does not count — an agent may never call it and no grade would notice.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from passhat.lint.loading import LoadedCase

ROLES = ("required", "ordered", "faulted", "forbidden")


def _roles(lc: LoadedCase) -> dict[str, set[str]]:
    c = lc.case
    return {
        "required": {r.tool for r in c.required_tools},
        "ordered": {t for o in c.order for t in (o.first, o.then)},
        "faulted": {f.tool for f in c.faults},
        "forbidden": set(c.forbidden_tools),
    }


def coverage(cases: list[LoadedCase]) -> dict[str, Any]:
    """Counts of cases per split, per tag value and per group, and per tool and role."""
    splits = Counter(lc.case.split for lc in cases)
    tags: dict[str, Counter[str]] = defaultdict(Counter)
    for lc in cases:
        for k, v in lc.case.tags.items():
            tags[k][v] += 1
    groups = Counter(lc.case.group for lc in cases if lc.case.group)
    tools: dict[str, dict[str, Any]] = {}
    for lc in cases:
        if lc.domain is None:
            continue
        for t in lc.domain.tool_list():
            tools.setdefault(t.name, {"domain": lc.domain.name, "kind": t.kind, "external": t.external,
                                      **dict.fromkeys(ROLES, 0), "cases": 0})
    for lc in cases:
        roles = _roles(lc)
        for name in set().union(*roles.values()):
            if name in tools:
                tools[name]["cases"] += 1
                for role in ROLES:
                    tools[name][role] += name in roles[role]
    return {
        "cases": len(cases),
        "splits": {s: splits.get(s, 0) for s in ("dev", "holdout", "regression")},
        "tags": {k: dict(sorted(v.items())) for k, v in sorted(tags.items())},
        "families": len(groups),
        "cases_in_families": sum(groups.values()),
        "tools": dict(sorted(tools.items())),
        "unexercised_tools": sorted(n for n, t in tools.items() if t["cases"] == 0),
    }
