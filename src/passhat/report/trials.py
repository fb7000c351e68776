"""Per-case trial data for the HTML report, written as small JavaScript files loaded on demand.

Why script files and not ``fetch()``: a report opened straight from disk (``file://``) may not fetch
its neighbours in Chromium, but it may always load a ``<script src>``. Each case gets one file,
``RUN/report/trials/VERSION/cNNNNN.js``, holding one ``passhat.add(N, {...});`` statement per trial, the
record exactly as stored in trials.jsonl (already redacted) except that the seed becomes a string:
a 64-bit integer does not survive as a JavaScript number. One statement per trial makes the files
append-only, so records are streamed once in any order and memory stays bounded by ``FLUSH_BYTES``
whatever the size of the run. The page itself carries only summaries.

Each report writes its chunks into a folder of its own (``VERSION``, unique per write) and the page
names that folder, so the page on disk always points at chunks that are complete: a report killed
half-way leaves the previous page and its folder untouched, and the previous folder is removed only
after the new page has replaced the old one (:meth:`TrialData.prune`).

Speed: when the summary is already known, stored lines are copied without building a ``TrialRecord``
— only ``TrialHead`` (case, outcome, latency, cost) is parsed, about 15× faster than full validation.
"""

from __future__ import annotations

import math
import re
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from passhat.models.finite import dumps_strict
from passhat.runner.records import TrialRecord, check_record_version
from passhat.runner.store import check_finite, not_a_record

DATA_DIR = "report"
TRIALS_DIR = "trials"
FLUSH_BYTES = 16 * 1024 * 1024
"""Buffered trial JSON written out once this much is pending; bounds memory on large runs."""
SEED = re.compile(rb'"seed":(\d+)')
"""The record's own seed is its first ``"seed":`` key (after ``case_id`` and ``trial``); a quote inside
a JSON string is always escaped, so string content cannot match."""


class _Timing(BaseModel):
    agent_s: float = 0.0


class _Usage(BaseModel):
    cost: float = 0.0


class TrialHead(BaseModel):
    """The few fields of a stored record the page itself needs (the rest is only passed through)."""

    case_id: str
    outcome: str
    timing: _Timing
    usage: _Usage = _Usage()


def chunk_name(index: int) -> str:
    return f"c{index:05d}.js"


@dataclass
class TrialData:
    """What a streaming pass over the records leaves behind: chunk files and per-trial distributions."""

    folder: Path
    version: str = field(default_factory=lambda: f"{time.time_ns():x}")
    """Names this report's chunk folder (and busts the browser cache of a re-written report)."""
    case_index: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    trials: dict[str, int] = field(default_factory=dict)
    """Trials written per case (errors included), so the page can say how many it will load."""
    lazy_bytes: int = 0
    _pending: dict[int, list[bytes]] = field(default_factory=dict)
    _pending_bytes: int = 0

    @property
    def trials_dir(self) -> Path:
        return self.folder / DATA_DIR / TRIALS_DIR / self.version

    def chunk_path(self, case_id: str) -> str:
        """The chunk of a case, relative to the run folder (as the page refers to it)."""
        return f"{DATA_DIR}/{TRIALS_DIR}/{self.version}/{chunk_name(self.case_index[case_id])}"

    def reset(self, case_ids: Iterable[str]) -> None:
        """Start this report's own, empty chunk folder (earlier reports' folders stay until :meth:`prune`)."""
        self.trials_dir.mkdir(parents=True)
        for cid in case_ids:
            self.case_index.setdefault(cid, len(self.case_index))

    def discard(self) -> None:
        """Remove this report's chunks (its page was never written)."""
        shutil.rmtree(self.trials_dir, ignore_errors=True)

    def prune(self) -> None:
        """Remove every other report's chunks, once this report's page is in place."""
        for entry in self.trials_dir.parent.iterdir():
            if entry.name == self.version:
                continue
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)  # chunks of reports written before chunk folders had versions

    def add(self, record: TrialRecord | TrialHead, stored: bytes) -> None:
        """Queue one stored record line for its case's chunk and note its latency and cost."""
        idx = self.case_index.setdefault(record.case_id, len(self.case_index))
        line = b"passhat.add(%d,%s);\n" % (idx, SEED.sub(rb'"seed":"\1"', stored.rstrip(b"\n"), count=1))
        self._pending.setdefault(idx, []).append(line)
        self._pending_bytes += len(line)
        self.trials[record.case_id] = self.trials.get(record.case_id, 0) + 1
        if record.outcome != "error":  # a non-finite value (an agent reporting NaN cost) has no place on an axis
            if math.isfinite(record.timing.agent_s):
                self.latencies.append(record.timing.agent_s)
            if math.isfinite(record.usage.cost):
                self.costs.append(record.usage.cost)
        if self._pending_bytes >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        for idx, lines in self._pending.items():
            data = b"".join(lines)
            with (self.trials_dir / chunk_name(idx)).open("ab") as fh:
                fh.write(data)
            self.lazy_bytes += len(data)
        self._pending.clear()
        self._pending_bytes = 0

    def tee(self, records: Iterable[TrialRecord]) -> Iterator[TrialRecord]:
        """Pass records through unchanged while writing each to its chunk: one pass feeds the summary too."""
        for record in records:
            self.add(record, record.model_dump_json().encode("utf-8"))
            yield record
        self.flush()

    def copy_lines(self, path: Path) -> None:
        """Write every whole stored line of ``trials.jsonl`` to its chunk, parsing only its head."""
        if path.exists():
            with path.open("rb") as fh:
                for number, raw in enumerate(fh, start=1):
                    if not raw.endswith(b"\n"):
                        break  # a killed write: RunStore skips it too
                    check_finite(raw, path, number)  # a NaN would reach the page's JSON
                    check_record_version(raw, f"{path}:{number}")
                    try:
                        head = TrialHead.model_validate_json(raw)
                    except ValueError as exc:  # the summary's readers refuse it too: never shown one trial short
                        raise not_a_record(path, number, raw, exc) from None
                    self.add(head, raw)
        self.flush()


def chunk_json(value: object) -> str:
    """JSON safe to place inside an HTML ``<script type="application/json">`` (no ``</script>`` break-out)."""
    return dumps_strict(value, "the report's data", ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
