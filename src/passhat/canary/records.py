"""Production outcome records: one JSON object per line, checked field by field as it is read."""

from __future__ import annotations

import io
import json
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from passhat.errors import PasshatError
from passhat.inputs import open_input, too_deep

Outcome = Literal["success", "handoff", "error"]
"""How a production conversation ended: the agent solved it, handed it to a human, or failed."""
OUTCOMES: tuple[str, ...] = get_args(Outcome)


@dataclass(frozen=True)
class OutcomeRecord:
    """One production conversation of one version."""

    version: str
    """The agent version that served it (e.g. a release tag)."""
    outcome: Outcome
    """``"success"``, ``"handoff"`` or ``"error"``."""
    latency_s: float
    """Wall-clock seconds to the outcome, ≥ 0."""
    cost: float | None = None
    """What it cost (any currency, the same in both files), ≥ 0; None when not recorded."""
    segment: str | None = None
    """A slice to report separately (channel, locale, customer tier); None: counted only overall."""


def load_records(path: Path) -> list[OutcomeRecord]:
    """Every record of the JSONL file ``path`` (blank lines skipped), in file order.

    A line that is not a JSON object, or a field that is missing or of the wrong kind, raises
    :class:`PasshatError` naming ``file:line``, the field and what would be valid. A file without records
    is an error too: it has nothing to compare.
    """
    with open_input(path, "outcome records") as raw:
        return parse_records(raw.read(), path)


def parse_records(raw: bytes, path: Path) -> list[OutcomeRecord]:
    """The records in ``raw``, the bytes of the file ``path`` (named in errors), exactly as :func:`load_records`
    reads them: for a caller that hashes the bytes it parses (a gate records what decided its verdict)."""
    try:
        return _records(io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"), path)
    except UnicodeDecodeError as exc:
        raise PasshatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _records(lines: Iterable[str], path: Path) -> list[OutcomeRecord]:
    records = []
    total_cost = 0.0
    for number, line in enumerate(lines, start=1):
        if line.strip():
            record = _parse(line, f"{path}:{number}")
            total_cost += record.cost or 0.0
            if not math.isfinite(total_cost):  # Σ cost / successes would be inf, and inf is not JSON
                raise PasshatError(f"{path}:{number}: cost: the costs up to this line add up past the float range "
                                   f"(~{sys.float_info.max:.1e}); give costs in a larger unit")
            records.append(record)
    if not records:
        raise PasshatError(f"{path}: no records (expected one JSON object per line)")
    return records


def _parse(line: str, where: str) -> OutcomeRecord:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise PasshatError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    except ValueError as exc:  # an integer of more digits than Python converts (4,300): not a decode error
        raise PasshatError(f"{where}: not valid JSON ({str(exc).partition(':')[0]})") from None
    except RecursionError:
        raise too_deep(where) from None
    if not isinstance(data, dict):
        raise PasshatError(f"{where}: expected a JSON object, got {type(data).__name__}")
    version = data.get("version")
    if not isinstance(version, str) or not version:
        raise PasshatError(f"{where}: version: expected a non-empty string, got {version!r}")
    outcome = data.get("outcome")
    if outcome not in OUTCOMES:
        raise PasshatError(f"{where}: outcome: expected one of {', '.join(OUTCOMES)}, got {outcome!r}")
    latency = _number(data, "latency_s", where, required=True)
    assert latency is not None
    segment = data.get("segment")
    if segment is not None and (not isinstance(segment, str) or not segment):
        raise PasshatError(f"{where}: segment: expected a non-empty string when present, got {segment!r}")
    return OutcomeRecord(version, outcome, latency, _number(data, "cost", where, required=False), segment)


def _number(data: dict[str, object], field: str, where: str, *, required: bool) -> float | None:
    value = data.get(field)
    if value is None and not required:
        return None
    number = _as_float(value)
    if number is None or not math.isfinite(number) or number < 0:
        what = "a number ≥ 0" if required else "a number ≥ 0 when present"
        shown = "an integer past the float range" if isinstance(value, int) and number is None else repr(value)
        raise PasshatError(f"{where}: {field}: expected {what}, got {shown}")
    return number


def _as_float(value: object) -> float | None:
    """``value`` as a float when it is a JSON number that has one; None for anything else, including an
    integer past the float range (JSON integers are unbounded: ``1`` followed by 400 zeros)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None
