"""Read back a summary.json passhat wrote, cheaply: is it current, and what does it say (issues 20, 22).

``passhat show`` of a finished run prints the run's summary.json. Deciding that it counts every record by
counting the lines of trials.jsonl read all 1.3 GB of it (0.9 s on 10,000 cases × 16 trials); a summary
passhat writes records the size of trials.jsonl it was computed from (``trials_bytes``), so "current" is
two ``stat`` calls. The file is then read through ``models.Summary`` (validated from its bytes: 0.2 s of
CPU for those 19 MB, plus 0.1 s to import pydantic and build the model) and every reader reads the model,
never the JSON by key (docs/design/030). Neither numpy nor the statistics are loaded to show a run.

A summary without ``trials_bytes`` (written by an older passhat, or by hand) is checked the old way, by
counting the complete lines of trials.jsonl.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from passhat.errors import RunError

if TYPE_CHECKING:
    from passhat.models import Summary

SUMMARY_FILE, TRIALS_FILE = "summary.json", "trials.jsonl"


def written_summary(folder: Path, by: Sequence[str] = (), *,
                    invalid: Literal["raise", "recompute"] = "raise") -> Summary | None:
    """The run's summary.json when it is the summary of exactly the records now in trials.jsonl.

    Current means: of this schema version, written after the last change to trials.jsonl, for the whole run
    (no split) with every stratum in ``by``, and computed from a trials.jsonl of the size it has now
    (``trials_bytes``; without it, counting every complete record line, Σ n + errors). None otherwise, and
    the caller recomputes: a summary is derived data. A file of the current version that does not match its
    model (edited by hand) raises the error naming the file and field, or, with ``invalid="recompute"``,
    counts as not current.
    """
    from passhat.models import SchemaVersionError, Summary

    folder = Path(folder)
    path, trials = folder / SUMMARY_FILE, folder / TRIALS_FILE
    try:
        trials_stat = trials.stat()
        if path.stat().st_mtime_ns < trials_stat.st_mtime_ns:
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    try:
        summary = Summary.from_json(raw, str(path))
    except SchemaVersionError:
        return None  # another version: recomputed
    except RunError:
        if invalid == "recompute":
            return None
        raise
    if summary.suite.split is not None or any(k not in summary.strata for k in by):
        return None
    if summary.trials_bytes is not None:
        return summary if summary.trials_bytes == trials_stat.st_size else None
    recorded = sum(c.n + c.errors for c in summary.cases)
    return summary if recorded == complete_lines(trials) else None


def complete_lines(path: Path) -> int:
    """Newline-terminated lines of a file: the records ``iter_records`` reads (a partial last line is not one)."""
    lines = 0
    with Path(path).open("rb") as fh:
        while chunk := fh.read(1 << 24):
            lines += chunk.count(b"\n")
    return lines
