"""Frozen suite snapshots: prove later that a run used exactly the suite that was frozen.

Comparing two systems needs the same evaluation snapshot (seed 001 §3). ``passhat suite freeze``
writes the hashes that define a suite — every case, every fixture, each domain's code — and
``passhat run --frozen FILE`` refuses to run when the suite on disk differs, naming what changed.
The snapshot's ``suite`` block has the shape of a run manifest's, so :func:`changed_cases` compares
either with either.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from passhat import __version__
from passhat.cases import Suite
from passhat.errors import PasshatError
from passhat.inputs import read_input_text
from passhat.models import CaseMeta, FrozenCheck, SuiteInfo
from passhat.suites.changes import SuiteChanges, changed_cases, describe_changes
from passhat.tools.faults import planned_faults
from passhat.validation import dump_yaml, load_yaml, yaml_problem

FORMAT = "passhat-suite-snapshot/1"


class SuiteChanged(PasshatError):
    """The suite on disk differs from a frozen snapshot (``details`` names every difference)."""

    def __init__(self, message: str, details: SuiteChanges) -> None:
        super().__init__(message)
        self.details = details


def fixture_hashes(suite: Suite) -> dict[str, dict[str, str]]:
    """Hash of each fixture's built state, per domain (whatever the fixture read to build it)."""
    return suite.fixture_hashes()


def suite_block(suite: Suite) -> SuiteInfo:
    """The hashes that define a suite: a manifest's ``suite`` block, without where the suite is."""
    return SuiteInfo(
        name=suite.name, hash=suite.content_hash(), cases=suite.case_hashes(),
        case_meta={c.id: CaseMeta(split=c.split, group=c.group, tags=c.tags, domain=c.domain, fixture=c.fixture,
                                  **planned_faults(c.faults)) for c in suite.cases},
        domains={n: d.content_hash() for n, d in sorted(suite.domains.items())}, fixtures=fixture_hashes(suite),
    )


def freeze(suite: Suite) -> dict[str, Any]:
    """A snapshot of the suite: what ``--frozen`` checks against."""
    return {"format": FORMAT, "passhat_version": __version__, "frozen_at": datetime.now(UTC).isoformat(),
            "suite": suite_block(suite).model_dump(mode="json", exclude_unset=True)}


def write_snapshot(path: Path, snapshot: dict[str, Any]) -> None:
    """Write as JSON (or YAML when the name ends in .yaml/.yml)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix in (".yaml", ".yml"):
        text = dump_yaml(snapshot, sort_keys=False, allow_unicode=True)
    else:
        text = json.dumps(snapshot, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, "utf-8")


def load_snapshot(path: Path) -> dict[str, Any]:
    """Read a snapshot file; anything else is bad input naming the file (one line: where, and what is wrong).

    Read as an input from outside (``inputs.read_input_text``): a named pipe blocked ``run --frozen`` and
    ``suite verify`` for ever, and bytes that are not UTF-8 were a passhat bug (exit 70)."""
    text = read_input_text(Path(path), "suite snapshot")
    try:
        data = load_yaml(text)  # JSON is YAML
    except yaml.YAMLError as exc:
        where, problem = yaml_problem(exc)
        raise PasshatError(f"{path}: {where + ': ' if where else ''}cannot read suite snapshot: {problem}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("suite"), dict):
        raise PasshatError(f"{path}: not a passhat suite snapshot (expected format: {FORMAT}; "
                           "write one with `passhat suite freeze SUITE --out FILE`)")
    snapshot_suite(data, str(path))
    return data


def snapshot_suite(snapshot: dict[str, Any], source: str = "snapshot") -> SuiteInfo:
    """A snapshot's ``suite`` block, which has the shape of a manifest's; a malformed one names the field."""
    try:
        return SuiteInfo.model_validate(snapshot.get("suite"))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise PasshatError(f"{source}: suite.{field}: {first['msg']} (not a passhat suite snapshot)") from None


def verify_snapshot(suite: Suite, snapshot: dict[str, Any], source: str = "snapshot") -> FrozenCheck:
    """Check the suite against a snapshot; raises :class:`SuiteChanged` naming every difference.

    Returns the ``frozen`` block for the manifest. A different passhat version is not a difference in
    the suite (it is recorded in the manifest anyway).
    """
    current, frozen = suite_block(suite), snapshot_suite(snapshot, source)
    if frozen.hash != current.hash:
        result = changed_cases(frozen, current)
        detail = describe_changes(result) or "suite hash differs"
        raise SuiteChanged(f"suite {suite.name!r} differs from the frozen snapshot {source} "
                           f"(hash {frozen.hash[:12]} vs {current.hash[:12]}): {detail}", result)
    return FrozenCheck(path=source, hash=current.hash, frozen_at=snapshot.get("frozen_at"),
                       snapshot_passhat_version=snapshot.get("passhat_version"))
