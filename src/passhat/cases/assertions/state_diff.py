"""How two row diffs of the same fixture differ: the trial's and its reference's (``expect_state: reference``).

Rows are matched by primary key; inserted rows whose keys the world generated (``R-55821``: they differ
between the trial and the reference) are matched by their other columns. Columns listed in ``ignore``
(timestamps) never count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from passhat.world.diff import Diff, RowChange, same_value

SHOWN = 5
"""How many differences a reason lists before summing up the rest."""


def summary(problems: list[str]) -> str:
    """The first ``SHOWN`` problems, then how many more there are."""
    more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    return "; ".join(problems[:SHOWN]) + more


def pairs(values: dict[str, Any]) -> str:
    """``id=4812, status='refunded'``: a row's columns as a reason names them."""
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _counts(ch: RowChange, skip: set[str]) -> bool:
    """A change that matters: not an update of ignored columns only."""
    return ch.kind != "updated" or any(f not in skip for f in ch.changed_fields)


def _differing(expected: dict[str, Any] | None, actual: dict[str, Any] | None, skip: set[str]) -> list[str]:
    """Columns (outside ``skip``) whose values differ, as "col expected X, actual Y"."""
    exp, act = expected or {}, actual or {}
    return [f"{c} expected {exp.get(c)!r}, actual {act.get(c)!r}"
            for c in dict.fromkeys([*exp, *act]) if c not in skip and not same_value(exp.get(c), act.get(c))]


def _describe(ch: RowChange, skip: set[str]) -> str:
    if ch.kind == "deleted":
        return "deleted"
    after = ch.after or {}
    fields = [f for f in ch.changed_fields if f not in skip]
    return f"{ch.kind} ({pairs({f: after[f] for f in fields})})"


def state_differences(actual: Diff, expected: Diff, ignore: dict[str, list[str]],
                      key_columns: Callable[[str], list[str]]) -> list[str]:
    """How the trial's row changes differ from the reference's, table by table (empty: the same)."""
    out: list[str] = []
    for table in sorted(set(actual.tables) | set(expected.tables)):
        skip = set(ignore.get(table, ()))
        exp = {c.key: c for c in expected.rows(table) if _counts(c, skip)}
        act = {c.key: c for c in actual.rows(table) if _counts(c, skip)}
        for key in [k for k in exp if k in act]:
            e, a = exp.pop(key), act.pop(key)
            if e.kind != a.kind:
                out.append(f"{table} {list(key)}: expected {e.kind}, actual {a.kind}")
            elif (cols := _differing(e.after, a.after, skip)):
                out.append(f"{table} {list(key)}: " + ", ".join(cols))
        generated = set(key_columns(table)) | skip  # inserts whose keys differ are matched on the rest
        new_exp = [c for c in exp.values() if c.kind == "inserted"]
        new_act = [c for c in act.values() if c.kind == "inserted"]
        for e in list(new_exp):
            twin = next((a for a in new_act if not _differing(e.after, a.after, generated)), None)
            if twin is not None:
                new_exp.remove(e)
                new_act.remove(twin)
                del exp[e.key], act[twin.key]
        for e, a in zip(new_exp, new_act, strict=False):  # unmatched inserts side by side: show how they differ
            del exp[e.key], act[a.key]
            out.append(f"{table} inserted {list(a.key)}: " + ", ".join(_differing(e.after, a.after, generated)))
        out += [f"{table} {list(k)}: expected {_describe(c, skip)}, did not happen" for k, c in exp.items()]
        out += [f"{table} {list(k)}: unexpected {_describe(c, skip)}" for k, c in act.items()]
    return out
