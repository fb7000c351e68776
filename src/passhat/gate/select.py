"""Which cases a gate rule looks at: by tag, split or id, using the tags recorded in the run's manifest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.cases.model import Split
from passhat.models import CaseMeta


class Selection(BaseModel):
    """Cases a rule applies to. Every field given must match (AND); an empty selection is every case. A
    selection that names a case id the run does not have, or matches no case of the run (a tag key, value or
    split no case carries), is warned about by ``passhat run --gate`` before the first trial."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    tags: dict[str, list[str]] = Field(default_factory=dict)
    """Tag values a case must carry, e.g. ``{scenario: permission}``; a list means any of those values,
    e.g. ``{scenario: [normal, happy-path]}``."""
    split: list[Split] = Field(default_factory=list)
    """Only cases of these splits (``dev``, ``holdout``, ``regression``); one value or a list."""
    cases: list[str] = Field(default_factory=list)
    """Only these case ids."""

    @field_validator("tags", mode="before")
    @classmethod
    def _tag_lists(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): [str(x) for x in v] if isinstance(v, list) else [str(v)] for k, v in value.items()}
        return value

    @field_validator("split", "cases", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    def matches(self, case_id: str, meta: CaseMeta) -> bool:
        """Whether a case (its id and manifest ``case_meta`` entry) is selected."""
        return (
            all(meta.tags.get(key) in values for key, values in self.tags.items())
            and (not self.split or meta.split in self.split)
            and (not self.cases or case_id in self.cases)
        )

    def describe(self) -> str:
        """Short human form, e.g. ``scenario=permission``; ``all cases`` when empty."""
        parts = [f"{k}={'|'.join(v)}" for k, v in self.tags.items()]
        if self.split:
            parts.append(f"split={'|'.join(self.split)}")
        if self.cases:
            parts.append(f"cases={','.join(self.cases)}")
        return " ".join(parts) or "all cases"


def selection_problem(select: Selection, metas: Mapping[str, CaseMeta]) -> str | None:
    """What in ``select`` names nothing among these cases (id → manifest meta): case ids the run does not have,
    or, when it matches no case at all, the tag keys, values and splits no case carries. ``None`` when every
    listed id exists and some case matches. A selection of no case leaves its rule INCONCLUSIVE whatever the
    agent does, and a misspelt id silently narrows it: both are said before the first trial."""
    unknown = [c for c in select.cases if c not in metas]
    if unknown:
        return f"no case {', '.join(map(repr, unknown))} in this run"
    if any(select.matches(cid, meta) for cid, meta in metas.items()):
        return None
    missing = []
    for key, values in select.tags.items():
        seen = sorted({m.tags[key] for m in metas.values() if key in m.tags})
        if not seen:
            keys = sorted({k for m in metas.values() for k in m.tags})
            missing.append(f"no case has a tag {key!r} (tags: {', '.join(keys) or 'none'})")
        elif not set(values) & set(seen):
            missing.append(f"no case has {key}={'|'.join(values)} (values: {', '.join(seen)})")
    splits = {m.split for m in metas.values() if m.split is not None}  # None: a manifest from before splits
    if select.split and not splits & set(select.split):
        missing.append(f"no case is in split {'|'.join(select.split)} (splits: {', '.join(sorted(splits)) or 'none'})")
    return "; ".join(missing) or "no case matches all of it at once"
