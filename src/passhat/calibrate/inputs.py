"""Reading what calibration compares: human labels, judge verdicts, pairwise comparisons.

Human labels: CSV (header row) or JSONL with ``case_id``, ``trial``, ``label`` (pass/fail, true/false,
1/0, yes/no) and optionally ``criterion`` (omit it to label the trial's overall judge verdict).

Judge verdicts: a run folder (the judge grades in its ``trials.jsonl``) or a judgments JSONL written by
``passhat judge`` (one line per case, trial, repeat and criterion). Several repeats of the same item
give the test-retest consistency. Pairwise JSONL (``passhat pairwise``) gives the swap consistency.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from passhat.errors import PasshatError
from passhat.graders.base import Grade
from passhat.inputs import read_input_text

TRUE = {"pass", "passed", "true", "1", "yes", "y"}
FALSE = {"fail", "failed", "false", "0", "no", "n"}
PREFERENCES = ("A", "B", "tie", "invalid")
"""What ``passhat pairwise`` writes for each order (``graders.judge.Preference``)."""

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


def _shown(value: Any, limit: int = 40) -> str:
    """A value as an error message quotes it: a 10,000-digit number stays one short line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _label(value: Any, where: str, field: str = "label") -> bool:
    text = str(value).strip().lower() if isinstance(value, (str, bool, int)) else None
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise PasshatError(f"{where}: {field} {_shown(value)} is not pass/fail (use pass, fail, true, false, 1 or 0)")


def _count(value: Any, where: str, field: str) -> int:
    """A whole number ≥ 0 (a trial or a repeat): an int in JSON, digits in CSV; never a bool, a float or NaN."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) <= 18:
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**18:
        return value
    raise PasshatError(f"{where}: {field} {_shown(value)} is not a whole number ≥ 0")


def _rows(path: Path, needs: tuple[str, ...]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, row)`` for each row: a CSV's data rows (its header must name ``needs``; a row with more or
    fewer cells than the header is refused) or a JSONL file's non-empty lines, each a JSON object."""
    text = read_input_text(path, "labels or judgments")  # a regular file within the input caps, UTF-8
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""), restval=None)
        try:
            header = reader.fieldnames
            if not header:
                raise PasshatError(f"{path}: empty (need a header row naming {', '.join(needs)})")
            lacking = [f for f in needs if f not in header]
            if lacking:
                raise PasshatError(f"{path}:1: the header has no column {', '.join(map(repr, lacking))} (it names "
                                   f"{_shown(', '.join(header), 80)}; need {', '.join(needs)})")
            for row in reader:
                where = f"{path}:{reader.line_num}"
                if None in row:
                    raise PasshatError(f"{where}: {len(header) + len(row[None])} cells, the header names {len(header)}")
                if None in row.values():
                    missing = next(k for k, v in row.items() if v is None)
                    raise PasshatError(f"{where}: missing field {missing!r} ({len(header)} columns in the header)")
                yield where, row
        except csv.Error as exc:
            raise PasshatError(f"{path}:{reader.line_num}: not CSV: {exc}") from None
        return
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise PasshatError(f"{path}:{i}: not a JSON line: {exc}") from None
        if not isinstance(row, dict):
            raise PasshatError(f"{path}:{i}: not a JSON object ({type(row).__name__})")
        yield f"{path}:{i}", row


def _key(row: dict[str, Any], where: str) -> Key:
    for field in ("case_id", "trial"):
        if row.get(field) in (None, ""):
            raise PasshatError(f"{where}: missing field {field!r} (need case_id, trial, label; criterion optional)")
    if not isinstance(row["case_id"], str):
        raise PasshatError(f"{where}: case_id {_shown(row['case_id'])} is not a string")
    trial = _count(row["trial"], where, "trial")
    criterion = row.get("criterion") or None
    if criterion is not None and not isinstance(criterion, str):
        raise PasshatError(f"{where}: criterion {_shown(criterion)} is not a string")
    return (row["case_id"], trial, criterion)


def read_labels(path: Path) -> dict[Key, bool]:
    """Human labels by item; a repeated item must carry the same label."""
    labels: dict[Key, bool] = {}
    for where, row in _rows(path, ("case_id", "trial", "label")):
        key = _key(row, where)
        if "label" not in row:
            raise PasshatError(f"{where}: missing field 'label' (pass or fail)")
        value = _label(row["label"], where)
        if labels.get(key, value) != value:
            raise PasshatError(f"{where}: {key} is labelled both pass and fail")
        labels[key] = value
    if not labels:
        raise PasshatError(f"{path}: no labels (need rows of case_id, trial, label)")
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
    seen: dict[tuple[Key, int], str] = {}
    for where, row in _rows(path, ("case_id", "trial", "passed")):
        key = _key(row, where)
        if "passed" not in row:
            raise PasshatError(f"{where}: missing field 'passed'")
        repeat = _count(row.get("repeat") or 0, where, "repeat")
        if (key, repeat) in seen:  # a copied line would count as a repeat that agreed with itself
            raise PasshatError(f"{where}: {key} repeat {repeat} again (first at {seen[key, repeat]})")
        seen[key, repeat] = where
        score = row.get("score")
        result.append(Judgment(*key, _label(row["passed"], where, "passed"),
                               _label(row.get("decided", True), where, "decided"), repeat,
                               None if score in (None, "") else _count(score, where, "score")))
    return result


def read_pairwise(path: Path) -> list[dict[str, Any]]:
    """Pairwise comparisons: each line has ``first_order`` and ``second_order`` (A, B, tie or invalid)."""
    rows = []
    for where, row in _rows(path, ("first_order", "second_order")):
        if "first_order" not in row or "second_order" not in row:
            raise PasshatError(f"{where}: a pairwise line needs first_order and second_order")
        for field in ("first_order", "second_order"):
            if row[field] not in PREFERENCES:
                raise PasshatError(f"{where}: {field} {_shown(row[field])} is not one of {', '.join(PREFERENCES)}")
        rows.append(row)
    return rows
