"""The run folder: ``manifest.json``, append-only ``trials.jsonl``, ``summary.json``.

The manifest and summary are read and written through their models (:mod:`passhat.models`): a file of
another schema version is refused with an error naming it.

Records are whole lines appended with one ``write`` per batch and made durable by one ``fsync`` per
batch (:meth:`RunStore.write_lines`; a run batches the records that finish while the previous batch is
being synced, see :mod:`passhat.runner.commit`). A run killed at any moment leaves whole records plus at
most one partial last line, which :meth:`RunStore.load` drops and :meth:`RunStore.open_for_append` cuts
before resuming. A write that fails (a full disk) is rolled back to the last durable length where the
system allows, and raised: the records made durable before it are kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from passhat import sandbox
from passhat.errors import RunError
from passhat.models import Manifest
from passhat.models.finite import dumps_strict, non_finite_field
from passhat.redaction import Redactor
from passhat.runner.records import NOT_A_RECORD, TrialRecord, check_record_version

if TYPE_CHECKING:  # the summary's models are built once a run has its summary, not before its first trial
    from passhat.models import Summary

MANIFEST, TRIALS, SUMMARY = "manifest.json", "trials.jsonl", "summary.json"
LOCK = ".passhat.lock"
"""Held (``flock``) by the run writing the folder; the kernel releases it when that process ends, however."""


Parsed = TypeVar("Parsed", bound=BaseModel)


def read_records(path: Path, model: type[Parsed]) -> Iterator[Parsed]:
    """Stream the lines of a ``trials.jsonl`` parsed as ``model`` (whole records, or only the fields a
    reader needs). An unterminated last line (a write killed mid-way) is skipped; any other line that does
    not parse is an error naming it, never silently dropped from the statistics."""
    if not path.exists():
        return
    plan = _Plan.of(path.parent / MANIFEST)
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                break
            check_finite(raw, path, number)
            check_record_version(raw, f"{path}:{number}")
            try:
                record = model.model_validate_json(raw)
            except ValueError as exc:
                raise not_a_record(path, number, raw, exc) from None
            if plan is not None:
                plan.check(getattr(record, "case_id", None), getattr(record, "trial", None), path, number)
            yield record


def not_a_record(path: Path, number: int, raw: bytes, exc: ValueError) -> RunError:
    """The error for a stored line that does not parse as a record: ``file:line``, then the field and what is
    wrong with it (pydantic's first problem), or what the line is instead (empty, not JSON, not an object).
    The model's own summary ("1 validation error for TallyRecord") names neither the field nor anything the
    user wrote."""
    from passhat.validation import first_problem  # only on this error path: readers need not import YAML

    if not raw.strip():
        problem = " (an empty line)"
    elif isinstance(exc, ValidationError):
        first, field, more = first_problem(exc)
        problem = f": {field}: {first['msg']}{more}" if first["loc"] else f" ({first['msg']})"
    else:
        problem = f" ({str(exc).splitlines()[0]})"
    return RunError(f"{path}:{number}: not a trial record{problem}; {NOT_A_RECORD}")


class _Plan:
    """What the manifest says a run's records can be: its cases and ``0 … trials-1`` once each. A record
    outside it (a second copy of a trial, a case the run never had, trial 7 of a 4-trial run) would be
    counted into n; readers refuse it, naming the line. One bit per planned trial remembers what was seen."""

    def __init__(self, cases: dict[str, int], trials: int) -> None:
        self.cases = cases
        """Case id → its position, for the bitmap of seen trials."""
        self.trials = trials
        self.seen = bytearray((len(cases) * trials + 7) // 8)

    @classmethod
    def of(cls, manifest_path: Path) -> _Plan | None:
        """The plan in ``manifest_path``; ``None`` when there is no manifest (a bare ``trials.jsonl``)."""
        if not manifest_path.is_file():
            return None
        manifest = Manifest.load(manifest_path)
        return cls({case: i for i, case in enumerate(manifest.suite.cases)}, manifest.trials)

    def check(self, case_id: str | None, trial: int | None, path: Path, number: int) -> None:
        if case_id is None or trial is None:
            return
        where = f"{path}:{number}"
        position = self.cases.get(case_id)
        if position is None:
            raise RunError(f"{where}: case {case_id!r} is not one of the run's cases (manifest.json lists "
                           f"{len(self.cases)}); a record from another run? remove that line")
        if not 0 <= trial < self.trials:
            raise RunError(f"{where}: trial {trial} of case {case_id!r} is outside the run's trials 0…{self.trials - 1} "
                           "(manifest.json); remove that line")
        bit = position * self.trials + trial
        if self.seen[bit >> 3] & (1 << (bit & 7)):
            raise RunError(f"{where}: a second record of case {case_id!r} trial {trial}; a trial is recorded once — "
                           "remove the copy")
        self.seen[bit >> 3] |= 1 << (bit & 7)


def check_finite(raw: bytes, path: Path, number: int) -> None:
    """Refuse a stored line holding ``NaN`` or ``Infinity``, naming the file, line and field.

    passhat never writes one (``allow_nan=False``), but Python's JSON reader accepts them, so an edited or
    foreign record would reach the statistics and fail there as a passhat bug. Only lines that contain the
    words are parsed again, so the cost is a byte search per line.
    """
    if b"NaN" not in raw and b"Infinity" not in raw:
        return
    found: list[str] = []

    def constant(name: str) -> float:
        found.append(name)
        return float(name.replace("Infinity", "inf"))

    try:
        data = json.loads(raw, parse_constant=constant)
    except ValueError:
        return  # not JSON at all: the model's own error says so
    if found:
        field = non_finite_field(data) or "a number"
        raise RunError(f"{path}:{number}: {field} is {found[0]}, which is not a number a trial record can hold; "
                       "fix or remove that line — passhat never skips a recorded trial")


class RunStore:
    """Reads and writes one run folder."""

    def __init__(self, folder: Path, redactor: Redactor | None = None) -> None:
        self.folder = folder
        self._fd: int | None = None
        self._durable = 0
        """Length of ``trials.jsonl`` up to which every byte has been fsync'd."""
        self._writing = threading.Lock()
        """Held while a batch is written (in a worker thread): :meth:`close` waits for it, never closes under it."""
        self._lock_fd: int | None = None
        self.redactor = redactor or Redactor(enabled=False)
        """Applied to every record before it is written (the runner passes the run's redactor)."""

    @property
    def trials_path(self) -> Path:
        return self.folder / TRIALS

    def manifest(self) -> Manifest:
        """The run's ``manifest.json`` through its model; a folder without one is not a run folder."""
        return Manifest.of_run(self.folder)

    def write_manifest(self, manifest: Manifest) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        manifest.dump(self.folder / MANIFEST)

    def write_summary(self, summary: Summary) -> None:
        summary.dump(self.folder / SUMMARY)

    def iter_records(self) -> Iterator[TrialRecord]:
        """Stream whole records (see :func:`read_records`)."""
        return read_records(self.trials_path, TrialRecord)

    def load(self) -> list[TrialRecord]:
        return list(self.iter_records())

    def _make_folder(self) -> None:
        """Create the run folder; a file in its place is bad input that says what --out must be."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            in_the_way = next((p for p in (self.folder, *self.folder.parents) if p.exists() and not p.is_dir()),
                              self.folder)
            where = f"{self.folder} is" if in_the_way == self.folder else f"{self.folder}: {in_the_way} is"
            raise RunError(f"{where} a file, not a folder; --out is a folder: a new one, or the folder of a run to "
                           "continue with --resume") from None

    def lock(self) -> None:
        """Become the folder's only writer until :meth:`close`. A second ``passhat run`` on the same folder
        (two CI jobs with one ``--out``) is refused here instead of interleaving duplicate records."""
        if self._lock_fd is not None:
            return
        self._make_folder()
        fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise RunError(f"{self.folder} is being written by another passhat run ({holder}); "
                           "wait for it to finish, or choose another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} since {datetime.now(UTC).isoformat(timespec='seconds')}".encode())
        self._lock_fd = fd
        # while it is written, the folder is invisible to every sandboxed agent and command (docs/design/021),
        # and closed to other users (the fallback runs agents as another user)
        sandbox.hide(self.folder)
        with contextlib.suppress(OSError):
            os.chmod(self.folder, 0o700)

    def open_for_append(self) -> None:
        """Open ``trials.jsonl`` for appending, first cutting any partial last line."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.trials_path
        if path.exists():
            data = path.read_bytes()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                with path.open("r+b") as fh:
                    fh.truncate(end)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._durable = os.fstat(self._fd).st_size

    def check_trials_file(self) -> None:
        """Raise :class:`RunError` if ``trials.jsonl`` is no longer the file this run opened: removed (with
        its folder, say) or replaced by another file (another inode). Appending would go on into a file
        nobody can read, and the run would end with exit 0 and a summary of 0 trials."""
        if self._fd is None:
            return
        opened = os.fstat(self._fd)
        try:
            now = os.stat(self.trials_path)
        except FileNotFoundError:
            raise RunError(f"{self.trials_path} was removed while the run was writing it (its records are lost "
                           "with it); run again into a folder nothing else removes") from None
        except OSError as exc:
            raise RunError(f"{self.trials_path} cannot be checked while the run writes it ({exc.strerror or exc})") from None
        if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
            raise RunError(f"{self.trials_path} was replaced by another file while the run was writing it; the "
                           "records written since are not in it — run again into a folder nothing else writes")

    def encode(self, record: TrialRecord) -> bytes:
        """The record as it is stored: redacted, one JSON line.

        Written from the model and redacted as text (``Redactor.json_text``) where that gives the bytes the
        dump-redact-write path below gives (docs/design/032): 0.30 → 0.13 ms for a refunds record."""
        if self.redactor.on_text:
            text = _compact(record)
            redacted = self.redactor.json_text(text) if text is not None else None
            if redacted is not None:
                return redacted + b"\n"
        data = self.redactor.value(record.model_dump(mode="json"))
        raw = _compact(data)
        if raw is None:  # a real NaN is refused (not JSON: it must fail here, loudly, not make the file
            # unreadable); the words are written if they were text
            raw = dumps_strict(data, f"{self.trials_path}: case {record.case_id!r} trial {record.trial}",
                               ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return raw + b"\n"

    def write_lines(self, lines: bytes) -> None:
        """Append whole encoded lines and make them durable (one ``write``, one ``fsync``) before returning.
        Safe to call from a worker thread (the run's writer does); calls and :meth:`close` are serialized."""
        with self._writing:
            if self._fd is None:
                raise RunError("run store is not open for appending")
            self.check_trials_file()
            try:
                view = memoryview(lines)
                while view:  # a regular file takes it in one call; a short write is continued, not lost
                    view = view[os.write(self._fd, view):]
                os.fsync(self._fd)
            except OSError as exc:
                with contextlib.suppress(OSError):  # leave only the durable records, not part of this batch
                    os.ftruncate(self._fd, self._durable)
                raise RunError(f"{self.trials_path}: cannot write trial records ({exc.strerror or exc}); the "
                               f"records written before are kept: fix the cause and continue with --resume") from exc
            self._durable += len(lines)

    def append(self, record: TrialRecord) -> None:
        """Append one whole record and make it durable before returning."""
        self.write_lines(self.encode(record))

    def close(self) -> None:
        with self._writing:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None
            sandbox.unhide(self.folder)


def _compact(value: Any) -> bytes | None:
    """``value`` as pydantic's compact JSON, or None where json.dumps must decide: an error, or the words NaN or
    Infinity anywhere (pydantic writes a real NaN as that word). pydantic's encoder is ~5x faster than json.dumps
    and writes the same bytes (floats in an exponent's range may be spelled 0.00001 for 1e-05: the same number)."""
    try:
        raw = to_json(value, inf_nan_mode="constants")
    except (ValueError, TypeError, UnicodeError):
        return None
    # a one-byte search (memchr) is ~10x cheaper than a search for the word, and most records hold no "N" or "I"
    return None if (b"N" in raw and b"NaN" in raw) or (b"I" in raw and b"Infinity" in raw) else raw
