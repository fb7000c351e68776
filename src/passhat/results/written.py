"""Read back a summary.json passhat wrote, cheaply: is it current, and what does it say (issue 22).

``passhat show`` of a finished run prints the run's summary.json. Checking it through ``models.Summary``
(pydantic) cost 0.4 s on 10,000 cases × 16 trials, and deciding that it counts every record by counting
the lines of trials.jsonl read all 1.3 GB of it (0.9 s). This module does neither: a summary passhat writes
records the size of trials.jsonl it was computed from (``trials_bytes``), so "current" is two ``stat``
calls, and the file is parsed as JSON and checked for its schema version only. It imports nothing but the
standard library and ``passhat.errors``, so neither numpy nor the statistics are loaded to show a run.

Full validation stays one flag away (``passhat show --validate``) and is what every other reader does
(``results.summary.read_current_summary``). A summary without ``trials_bytes`` (written by an older
passhat, or by hand) is checked the old way, by counting the complete lines of trials.jsonl.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from passhat.errors import RunError

SUMMARY_FILE, TRIALS_FILE, MANIFEST_FILE = "summary.json", "trials.jsonl", "manifest.json"
SUMMARY_SCHEMA_ID = "passhat.summary/3"
"""``models.Summary.schema_id()``, spelled out so that reading it needs no pydantic (a test holds them equal)."""


def read_manifest_json(folder: Path) -> dict[str, Any]:
    """``manifest.json`` as parsed JSON, unvalidated; a folder without one is not a run folder."""
    path = Path(folder) / MANIFEST_FILE
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise RunError(f"{folder} is not a run folder (no {MANIFEST_FILE})") from None
    except (OSError, ValueError) as exc:
        raise RunError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("suite"), dict):
        raise RunError(f"{path}: not a passhat manifest (no suite); check it with `passhat show --validate`")
    return data


def written_summary(folder: Path, by: Sequence[str] = ()) -> dict[str, Any] | None:
    """The run's summary.json as parsed JSON when it is the summary of exactly the records now in trials.jsonl.

    Current means: of this schema version, written after the last change to trials.jsonl, for the whole run
    (no split) with every stratum in ``by``, and computed from a trials.jsonl of the size it has now
    (``trials_bytes``; without it, counting every complete record line, Σ n + errors). None otherwise, and
    the caller recomputes: a summary is derived data.
    """
    folder = Path(folder)
    path, trials = folder / SUMMARY_FILE, folder / TRIALS_FILE
    try:
        trials_stat = trials.stat()
        if path.stat().st_mtime_ns < trials_stat.st_mtime_ns:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema_version") != SUMMARY_SCHEMA_ID:
        return None
    suite, strata = data.get("suite"), data.get("strata", {})
    if not isinstance(suite, dict) or suite.get("split") is not None or not isinstance(strata, dict):
        return None
    if any(k not in strata for k in by):
        return None
    size = data.get("trials_bytes")
    if isinstance(size, int) and not isinstance(size, bool):
        return data if size == trials_stat.st_size else None
    try:
        recorded = sum(c["n"] + c["errors"] for c in data["cases"])
    except (KeyError, TypeError):
        return None
    return data if recorded == complete_lines(trials) else None


def complete_lines(path: Path) -> int:
    """Newline-terminated lines of a file: the records ``iter_records`` reads (a partial last line is not one)."""
    lines = 0
    with Path(path).open("rb") as fh:
        while chunk := fh.read(1 << 24):
            lines += chunk.count(b"\n")
    return lines
