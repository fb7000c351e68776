"""The dataset side of ``passhat run``: frozen-snapshot check, case selection and cassettes, in that order.

The snapshot is checked against the whole suite before selecting (a frozen suite is frozen as a
whole); the manifest records the snapshot, the filter and the chosen cases, and the cassette mode.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from passhat.cases import Suite
from passhat.errors import PasshatError
from passhat.models import FrozenCheck, Selection
from passhat.suites.select import CaseFilter, check_no_leak, parse_tag_filters, select_cases
from passhat.suites.snapshot import load_snapshot, verify_snapshot
from passhat.tools.cassette import Cassette, CassetteMode


@dataclass
class RunPlan:
    """What to run and what the manifest must say about how it was chosen."""

    suite: Suite
    cassette: Cassette | None = None
    frozen: FrozenCheck | None = None
    """The snapshot the whole suite matched (``--frozen``)."""
    selection: Selection | None = None
    """The cases chosen (None: every case)."""

    @property
    def manifest(self) -> dict[str, FrozenCheck | Selection]:
        """The manifest's entries for them (those that apply)."""
        entries = {"frozen": self.frozen, "selection": self.selection}
        return {name: entry for name, entry in entries.items() if entry is not None}


def plan_run(suite: Suite, *, splits: Sequence[str] = (), tags: Sequence[str] = (), frozen: Path | None = None,
             record: Path | None = None, replay: Path | None = None, cases: Sequence[str] = ()) -> RunPlan:
    """Apply ``--frozen``, the case selection (``cases`` ids, ``--split``, ``--tag``) and ``--record``/``--replay``;
    bad input raises ``PasshatError``."""
    if record is not None and replay is not None:
        raise PasshatError("--record and --replay exclude each other: record once, then replay")
    check = None
    if frozen is not None:
        check = verify_snapshot(suite, load_snapshot(frozen), str(frozen))
        check.sha256 = hashlib.sha256(Path(frozen).read_bytes()).hexdigest()
    check_no_leak(suite)
    selected, selection = select_cases(suite, CaseFilter(tuple(splits), parse_tag_filters(tags), tuple(cases)))
    cassette = None
    folder = record if record is not None else replay
    if folder is not None:
        mode: CassetteMode = "record" if record is not None else "replay"
        if not any(t.external for d in selected.domains.values() for t in d.tool_list()):
            raise PasshatError(f"--{mode}: no domain of suite {suite.name!r} has an external tool "
                               "(declare one with @tool(..., external=True))")
        cassette = Cassette.open(Path(folder), mode)
    return RunPlan(selected, cassette, check, selection)
