"""Choosing which cases of a suite to run: by split and by tag, recorded in the manifest.

Tuning and acceptance use different data (seed 001 §3): ``--split holdout`` runs only the acceptance
cases. A run of a selection is a run of a smaller suite — its manifest lists only the selected cases and
its suite hash covers only them — so summaries, comparisons and gates see exactly what was measured,
and the ``selection`` block says which filter chose them out of which full suite.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from passhat.cases import Case, Suite
from passhat.errors import PasshatError
from passhat.models.manifest import Selection, SuiteSize

SPLITS = ("dev", "holdout", "regression")
MAX_LISTED = 40
"""An unknown case id lists the suite's ids up to this many (a 10,000-case suite's list helps nobody)."""


class SelectionError(PasshatError):
    """A filter is malformed or selects nothing."""


def parse_tag_filters(items: Iterable[str]) -> dict[str, list[str]]:
    """``["scenario=fault", "risk=high", "risk=medium"]`` → ``{scenario: [fault], risk: [high, medium]}``.

    Different keys must all match (AND); repeating a key accepts any of its values (OR), like the
    ``select:`` of a gate rule.
    """
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise SelectionError(f"--tag {item!r}: expected KEY=VALUE, e.g. --tag scenario=fault")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


@dataclass(frozen=True)
class CaseFilter:
    """Case ids (any of), splits (any of) and tag values (every key, any listed value); empty means every case."""

    splits: tuple[str, ...] = ()
    tags: dict[str, list[str]] = field(default_factory=dict)
    ids: tuple[str, ...] = ()
    """Only these cases (the Python API's and the pytest plugin's ``cases=``); every id must exist."""

    def __post_init__(self) -> None:
        bad = [s for s in self.splits if s not in SPLITS]
        if bad:
            raise SelectionError(f"unknown split {bad[0]!r}; splits: {', '.join(SPLITS)}")

    @property
    def empty(self) -> bool:
        return not self.splits and not self.tags and not self.ids

    def matches(self, case: Case) -> bool:
        return ((not self.ids or case.id in self.ids) and (not self.splits or case.split in self.splits)
                and all(case.tags.get(k) in values for k, values in self.tags.items()))

    def describe(self) -> str:
        parts = [f"id={'|'.join(self.ids)}"] if self.ids else []
        parts += [f"split={'|'.join(self.splits)}"] if self.splits else []
        parts += [f"{k}={'|'.join(v)}" for k, v in self.tags.items()]
        return " ".join(parts) or "all cases"

    def to_json(self) -> dict[str, Any]:
        return {"split": list(self.splits), "tags": self.tags, **({"ids": list(self.ids)} if self.ids else {})}


def family_splits(cases: Iterable[Case]) -> dict[str, dict[str, list[str]]]:
    """Families (``group``) that span more than one split: group → split → case ids."""
    groups: dict[str, dict[str, list[str]]] = {}
    for c in cases:
        if c.group:
            groups.setdefault(c.group, {}).setdefault(c.split, []).append(c.id)
    return {g: dict(sorted(s.items())) for g, s in sorted(groups.items()) if len(s) > 1}


def check_no_leak(suite: Suite) -> None:
    """Refuse a suite whose family is in both dev and holdout: its holdout score would be inflated."""
    leaks = {g: s for g, s in family_splits(suite.cases).items() if {"dev", "holdout"} <= set(s)}
    if leaks:
        detail = "; ".join(f"{g!r} (" + "; ".join(f"{sp}: {', '.join(ids)}" for sp, ids in s.items()) + ")"
                           for g, s in leaks.items())
        raise SelectionError(f"suite {suite.name!r}: family spread over dev and holdout (the holdout has seen "
                             f"rewrites of its cases in development): {detail}; move each family into one split "
                             "(`passhat cases lint` lists every finding)")


def subset(suite: Suite, case_ids: Sequence[str]) -> Suite:
    """The suite restricted to ``case_ids`` (in suite order), with only the domains those cases use."""
    wanted = set(case_ids)
    cases = [c for c in suite.cases if c.id in wanted]
    used = {c.domain for c in cases}
    return Suite(suite.name, suite.folder, cases, {c.id: suite.files[c.id] for c in cases},
                 {n: d for n, d in suite.domains.items() if n in used})


def select_cases(suite: Suite, flt: CaseFilter) -> tuple[Suite, Selection | None]:
    """The selected sub-suite and the manifest's ``selection`` block (``None`` when nothing is filtered)."""
    if flt.empty:
        return suite, None
    ids = [c.id for c in suite.cases]
    unknown = [i for i in flt.ids if i not in set(ids)]
    if unknown:
        close = difflib.get_close_matches(unknown[0], ids, n=3)
        hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
        shown = ", ".join(ids[:MAX_LISTED]) + (f", … ({len(ids)} in all)" if len(ids) > MAX_LISTED else "")
        raise SelectionError(f"no case {unknown[0]!r} in suite {suite.name!r} (--case / cases=): {hint}its cases are {shown}")
    chosen = [c.id for c in suite.cases if flt.matches(c)]
    if not chosen:
        raise SelectionError(f"no case of suite {suite.name!r} matches {flt.describe()} "
                             f"(splits present: {', '.join(sorted({c.split for c in suite.cases}))})")
    block = Selection(filter=flt.to_json(), describe=flt.describe(), cases=chosen,
                      full_suite=SuiteSize(hash=suite.content_hash(), cases=len(suite.cases)))
    return subset(suite, chosen), block
