"""Which cases a gate rule looks at: by tag, split or id, using the tags recorded in the run's manifest."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.cases.model import Split
from passhat.models import CaseMeta


class Selection(BaseModel):
    """Cases a rule applies to. Every field given must match (AND); an empty selection is every case."""

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
