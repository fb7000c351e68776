"""Reading what calibration compares: human labels, judge verdicts, pairwise comparisons.

Human labels: CSV (header row) or JSONL with ``case_id``, ``trial``, ``label`` (pass/fail, true/false,
1/0, yes/no) and optionally ``criterion`` (omit it to label the trial's overall judge verdict).

Judge verdicts: a run folder (the judge grades in its ``trials.jsonl``) or a judgments JSONL written by
``passhat judge`` (one line per case, trial, repeat and criterion). Several repeats of the same item
give the test-retest consistency. Pairwise JSONL (``passhat pairwise``) gives the swap consistency.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from passhat.errors import PasshatError
from passhat.graders.base import Grade

TRUE = {"pass", "passed", "true", "1", "yes", "y"}
FALSE = {"fail", "failed", "false", "0", "no", "n"}

Key = tuple[str, int, str | None]
"""(case id, trial, criterion or ``None`` for the trial's overall judge verdict)."""


@dataclass(frozen=True)
class Judgment:
    """One judge verdict on one item."""

    case_id: str
    trial: int
    criterion: str | None
    passed: bool
    """The grade as it counted (a judge that could not decide failed: fail closed)."""
    decided: bool = True
    """False when the judge answered "cannot judge" or its answer was rejected."""
    repeat: int = 0
    score: int | None = None

    @property
    def key(self) -> Key:
        return (self.case_id, self.trial, self.criterion)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _label(value: Any, where: str) -> bool:
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise PasshatError(f"{where}: label {value!r} is not pass/fail (use pass, fail, true, false, 1 or 0)")


def _rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        if path.suffix.lower() == ".csv":
            with path.open(newline="", encoding="utf-8") as fh:
                for i, row in enumerate(csv.DictReader(fh), start=2):
                    yield f"{path}:{i}", row
            return
        with path.open(encoding="utf-8") as fh:
            for i, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        yield f"{path}:{i}", json.loads(line)
                    except ValueError as exc:
                        raise PasshatError(f"{path}:{i}: not a JSON line: {exc}") from None
    except OSError as exc:
        raise PasshatError(f"{path}: cannot read: {exc}") from None


def _key(row: dict[str, Any], where: str) -> Key:
    for field in ("case_id", "trial"):
        if row.get(field) in (None, ""):
            raise PasshatError(f"{where}: missing field {field!r} (need case_id, trial, label; criterion optional)")
    try:
        trial = int(row["trial"])
    except (TypeError, ValueError):
        raise PasshatError(f"{where}: trial {row['trial']!r} is not an integer") from None
    criterion = row.get("criterion") or None
    return (str(row["case_id"]), trial, None if criterion is None else str(criterion))


def read_labels(path: Path) -> dict[Key, bool]:
    """Human labels by item; a repeated item must carry the same label."""
    labels: dict[Key, bool] = {}
    for where, row in _rows(path):
        key = _key(row, where)
        if "label" not in row:
            raise PasshatError(f"{where}: missing field 'label' (pass or fail)")
        value = _label(row["label"], where)
        if labels.get(key, value) != value:
            raise PasshatError(f"{where}: {key} is labelled both pass and fail")
        labels[key] = value
    return labels


def judgments_from_grades(case_id: str, trial: int, grades: Iterable[Grade], repeat: int = 0) -> list[Judgment]:
    """Per-criterion verdicts plus the trial's overall verdict (all required judge criteria pass)."""
    judge = [g for g in grades if g.grader == "judge"]
    out = [Judgment(case_id, trial, g.name.removeprefix("judge: "), g.passed,
                    g.details.get("verdict") == "scored", repeat, g.details.get("score")) for g in judge]
    if judge:
        required = [g for g in judge if g.required] or judge
        out.append(Judgment(case_id, trial, None, all(g.passed for g in required),
                            all(j.decided for j in out), repeat))
    return out


def read_judgments(path: Path) -> list[Judgment]:
    """Judge verdicts from a run folder or a judgments JSONL file."""
    if path.is_dir():
        from passhat.runner.store import RunStore

        out: list[Judgment] = []
        for r in RunStore(path).iter_records():
            if r.outcome != "error":
                out += judgments_from_grades(r.case_id, r.trial, r.grades)
        return out
    result = []
    for where, row in _rows(path):
        case_id, trial, criterion = _key(row, where)
        if "passed" not in row:
            raise PasshatError(f"{where}: missing field 'passed'")
        result.append(Judgment(case_id, trial, criterion, _label(row["passed"], where), bool(row.get("decided", True)),
                               int(row.get("repeat", 0)), row.get("score")))
    return result


def read_pairwise(path: Path) -> list[dict[str, Any]]:
    """Pairwise comparisons: each line has ``first_order`` and ``second_order`` (A, B, tie or invalid)."""
    rows = []
    for where, row in _rows(path):
        if "first_order" not in row or "second_order" not in row:
            raise PasshatError(f"{where}: a pairwise line needs first_order and second_order")
        rows.append(row)
    return rows
