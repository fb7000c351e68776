"""Row-level differences between the fixture and the final state, keyed by primary key."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

ChangeKind = Literal["inserted", "updated", "deleted"]
_NUMBERS = (int, float)
"""What compares by value (a tuple: ``int | float`` written in the check made a union object per call, and
grading and diffs compare dozens of values per trial)."""


def same_value(a: Any, b: Any) -> bool:
    """Equality that compares numbers by value (``25 == 25.0``) and never treats text as a number.

    τ-bench hashed the whole database, so ``25`` vs ``25.0`` changed the verdict (#397). Booleans
    equal 1/0 because SQLite stores them as integers.
    """
    if isinstance(a, _NUMBERS) and isinstance(b, _NUMBERS):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def same_row(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Rows are the same when both are absent or every column has the same value."""
    if a is None or b is None:
        return a is b
    return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)


@dataclass(frozen=True)
class RowChange:
    """One row that differs between the initial and the final state."""

    table: str
    key: tuple[Any, ...]
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @property
    def kind(self) -> ChangeKind:
        if self.before is None:
            return "inserted"
        if self.after is None:
            return "deleted"
        return "updated"

    @property
    def changed_fields(self) -> list[str]:
        """Columns whose value changed (all columns for inserts and deletes)."""
        if self.before is None or self.after is None:
            return list((self.after or self.before or {}).keys())
        return [k for k in self.after if not same_value(self.before.get(k), self.after[k])]

    def to_json(self) -> dict[str, Any]:
        return {"key": list(self.key), "kind": self.kind, "before": self.before, "after": self.after}


@dataclass
class Diff:
    """Inserted, updated and deleted rows per table."""

    changes: dict[str, list[RowChange]] = field(default_factory=dict)

    def rows(self, table: str | None = None) -> list[RowChange]:
        """All changes, or those of one table."""
        if table is not None:
            return list(self.changes.get(table, []))
        return [c for items in self.changes.values() for c in items]

    def of_kind(self, kind: ChangeKind, table: str | None = None) -> list[RowChange]:
        return [c for c in self.rows(table) if c.kind == kind]

    @property
    def tables(self) -> list[str]:
        """Tables with at least one changed row."""
        return sorted(t for t, items in self.changes.items() if items)

    def __len__(self) -> int:
        return sum(len(v) for v in self.changes.values())

    def to_json(self) -> dict[str, list[dict[str, Any]]]:
        return {t: [c.to_json() for c in items] for t, items in sorted(self.changes.items()) if items}

    @classmethod
    def from_json(cls, data: dict[str, list[dict[str, Any]]]) -> Diff:
        """Rebuild a diff stored in a trial record (for re-grading without re-running)."""
        return cls(
            {
                t: [RowChange(t, tuple(c["key"]), c["before"], c["after"]) for c in items]
                for t, items in data.items()
            }
        )
