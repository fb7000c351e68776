"""Suite-level checks: duplicate ids, families across splits, near-duplicates, grading prose not work.

Seed 001 §3: rewrites of one request belong to one split, or the holdout has seen the answer; each
task states its acceptance in the final state ("the order is cancelled and the refund exists"), so a
case that can write but asserts nothing about the world grades what the agent *said*, not what it did.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from passhat.cases import Case
from passhat.cases.assertions import ASSERTION_KINDS, CustomAssertion
from passhat.domain import Domain
from passhat.lint.findings import Finding
from passhat.lint.loading import LoadedCase
from passhat.lint.similarity import THRESHOLD, Request
from passhat.suites.select import family_splits

STATE_KINDS = frozenset(kind for kind, model in ASSERTION_KINDS.items() if model.subject == "state")
"""Built-in assertions that check the world, not the reply (custom ``state`` graders count too)."""
TODO = "TODO"


def duplicate_ids(ids: list[tuple[str, Any]]) -> list[Finding]:
    seen: dict[str, str] = {}
    out = []
    for file, cid in ids:
        if not isinstance(cid, str):
            continue
        if cid in seen:
            out.append(Finding("duplicate-id", file, "id", f"duplicate case id {cid!r} (also in {seen[cid]})", cid))
        else:
            seen[cid] = file
    return out


def families(cases: list[LoadedCase]) -> list[Finding]:
    """A group in dev and holdout is a leak (error); in any other two splits, a warning."""
    by_id = {lc.case.id: lc for lc in cases}
    out = []
    for group, splits in family_splits(lc.case for lc in cases).items():
        where = "; ".join(f"{s}: {', '.join(ids)}" for s, ids in splits.items())
        leak = {"dev", "holdout"} <= set(splits)
        first = by_id[splits["holdout" if leak else list(splits)[-1]][0]]
        message = (f"family {group!r} is spread over splits ({where}): " +
                   ("the holdout has seen rewrites of its own cases in development — move the family into one split"
                    if leak else "rewrites of one request should stay in one split"))
        out.append(Finding("family-leak" if leak else "family-spread", first.file, "group", message, first.case.id))
    return out


def request(case: Case) -> tuple[str, str]:
    """What the user wants, as (field, text): the hidden goal when the case has one, else the instruction.

    A generic opener ("Hi, I need some help.") says nothing about the task, so two cases that share it
    but want different things are not duplicates, and one request behind two different openers is."""
    return ("user.goal", case.user.goal) if case.user.goal is not None else ("instruction", case.instruction)


def near_duplicates(cases: list[LoadedCase], threshold: float = THRESHOLD) -> list[Finding]:
    """Requests (:func:`request`) in different splits (and not one family, reported above) that are nearly
    the same, in the order of the pairs (first case, second case)."""
    requests = [Request(request(lc.case)[1]) for lc in cases]  # each text prepared once, not once per pair
    before: dict[str, list[int]] = {}  # split -> the cases of it seen so far: only pairs across splits are compared
    found: list[tuple[int, int, Finding]] = []
    for j, b in enumerate(cases):
        cb = b.case
        for i in (i for split, seen in before.items() if split != cb.split for i in seen):
            a = cases[i]
            ca = a.case
            if ca.group and ca.group == cb.group:
                continue
            score = requests[j].similar_to(requests[i], threshold)
            if score is not None:
                field_a, field_b = request(ca)[0], request(cb)[0]
                theirs = "" if field_a == field_b else f" (its {field_a})"
                found.append((i, j, Finding(
                    "near-duplicate", b.file, field_b,
                    f"nearly the same {field_b} as {ca.id!r}{theirs} ({ca.split}) in split {cb.split!r} "
                    f"(similarity {score:.2f} ≥ {threshold:g}): a probable leak — put both in one family and one split",
                    cb.id)))
        before.setdefault(cb.split, []).append(j)
    return [finding for _, _, finding in sorted(found, key=lambda t: (t[0], t[1]))]


def available_writes(case: Case, domain: Domain) -> list[str]:
    """Write tools the agent may call in this case (not forbidden, and allowed if a list is given)."""
    return [t.name for t in domain.tool_list() if t.kind == "write" and t.name not in case.forbidden_tools
            and (case.allowed_tools is None or t.name in case.allowed_tools)]


def checks_state(a: Any, domain: Domain | None) -> bool:
    """A built-in state assertion, or one on a custom grader of kind ``state``."""
    if isinstance(a, CustomAssertion):
        g = domain.graders.get(a.kind) if domain is not None else None
        return g is not None and g.kind == "state"
    return a.kind in STATE_KINDS


def grading(lc: LoadedCase) -> list[Finding]:
    """No assertions at all, or write tools available but nothing asserted about the state."""
    case = lc.case
    if not case.assertions and case.judge is None:
        return [Finding("no-assertions", lc.file, "assertions",
                        "no assertions: nothing decides whether the task was done (add state assertions)", case.id)]
    writes = available_writes(case, lc.domain) if lc.domain is not None else []
    if writes and not any(checks_state(a, lc.domain) for a in case.assertions):
        return [Finding("no-state-assertion", lc.file, "assertions",
                        f"write tools are available ({', '.join(writes)}) but no assertion checks the state: the case "
                        "grades what the agent said, not what it did (add row_count / field_equals / unchanged_except)",
                        case.id)]
    return []


def _strings(value: Any, path: str) -> Iterable[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}.{i}" if path else str(i))


def unfinished(lc: LoadedCase) -> list[Finding]:
    """Any text field that starts with ``TODO``: a skeleton (``passhat cases import``) not yet finished."""
    data = lc.case.model_dump(mode="json", exclude_defaults=True)
    return [Finding("unfinished", lc.file, path, f"placeholder to finish: {text.strip()[:80]!r}", lc.case.id)
            for path, text in _strings(data, "") if text.lstrip().startswith(TODO)]
