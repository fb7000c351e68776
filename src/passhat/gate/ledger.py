"""Every gate evaluation is a look at the data, recorded in the run folder so a second look can be refused.

"INCONCLUSIVE: add trials" invites gating again after more trials, and gating a run while it runs (then
again when it ends) is the same thing: each look is a fresh chance for noise to cross a bar, and two looks
at α each nearly double the error rates (0.073–0.103 in issue 22). So:

- a fixed-design run is gated only once it is finished (``refuse_unfinished``), and
- every evaluation appends a line to ``RUN/gate-looks.jsonl`` with the size of ``trials.jsonl`` it saw;
  gating the same run again is allowed while that size is unchanged (same data: the same look, e.g. with a
  baseline added later), and refused once it has changed (``refuse_new_trials``): more trials make a
  second look, which only a sequential design (``passhat run --sequential``) accounts for.

A sequential run records its looks in its manifest and is always gated at them (``gate.looks``), so gating
it again is a replay of the same looks, never a new one.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from passhat.gate.load import GateError
from passhat.models import Manifest
from passhat.models.gate import GateLook
from passhat.runner.store import TRIALS

LEDGER = "gate-looks.jsonl"


def trials_size(run_folder: Path) -> int:
    """Bytes of ``trials.jsonl`` (0 when there is none): what a look saw. Records are only ever appended."""
    path = Path(run_folder) / TRIALS
    return path.stat().st_size if path.exists() else 0


def previous_looks(run_folder: Path) -> list[GateLook]:
    """The looks recorded so far, oldest first; a torn last line (a write killed mid-way) is skipped."""
    path = Path(run_folder) / LEDGER
    if not path.exists():
        return []
    out: list[GateLook] = []
    for number, line in enumerate(path.read_bytes().splitlines(keepends=True), start=1):
        if not line.endswith(b"\n"):
            break
        try:
            out.append(GateLook.model_validate_json(line))
        except ValidationError:
            raise GateError(str(path), f"line {number}", "not a gate look; this file is written by passhat and "
                            "read to refuse re-gating a run after more trials") from None
    return out


def refuse_unfinished(run_folder: Path, manifest: Manifest, recorded: int) -> None:
    """Bad input (exit 2) when a fixed-design run has not finished: its gate would be a look at part of it."""
    status = manifest.status
    if status == "complete":
        return
    planned = manifest.trials * len(manifest.suite.cases)
    raise GateError(str(Path(run_folder) / "manifest.json"), "status", (
        f"the run is not finished (status {status!r}, {recorded} of {planned} planned trials recorded). A gate on "
        "part of a run is a look the final gate cannot account for, and peeking inflates both its error rates: "
        "resume the run (`passhat run … --resume --out RUN`) and gate it once it is complete, or plan the looks "
        "with `passhat run --gate FILE --sequential`, which spends α across them"))


def refuse_new_trials(run_folder: Path) -> None:
    """Bad input (exit 2) when the run was gated before on other data than it holds now (module docstring)."""
    size = trials_size(run_folder)
    changed = [e for e in previous_looks(run_folder) if e.trials_bytes != size]
    if not changed:
        return
    first = changed[0]
    raise GateError(str(Path(run_folder) / LEDGER), "", (
        f"this run was gated at {first.at} on {'?' if first.trials is None else first.trials} recorded trial(s) "
        f"(trials.jsonl was {first.trials_bytes} bytes; it is {size} now). Gating it again on other "
        "trials is a second look at the data, which nearly doubles the error rates at α per look; a fixed run "
        "is gated once. Start a new run, or run a sequential design (`passhat run --gate FILE --sequential`), "
        "whose looks are planned and spend α between them"))


def record_look(run_folder: Path, **seen: Any) -> None:
    """Append one look (``seen``: the :class:`GateLook` fields besides when and the size of trials.jsonl, which
    are taken here) and make it durable."""
    path = Path(run_folder) / LEDGER
    look = GateLook(at=datetime.now(UTC).isoformat(), trials_bytes=trials_size(run_folder), **seen)
    line = json.dumps(look.model_dump(mode="json"), sort_keys=True, allow_nan=False) + "\n"
    try:
        _drop_torn_tail(path)
        with path.open("ab") as fh:
            fh.write(line.encode())
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise GateError(str(path), "", f"cannot record this gate look: {exc.strerror or exc}; a look that is not "
                        "recorded could be repeated unseen, so the gate is not evaluated") from None


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line a killed write left unfinished (``previous_looks`` skips it; appending after it would
    glue the next look to it and leave a line no reader can parse). Its look never completed: no verdict was
    made from it."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)
