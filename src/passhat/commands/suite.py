"""``passhat suite hash|freeze|verify|diff``: suites as versioned datasets.

Exit codes: 0 success, 1 the suite differs from the snapshot (verify), 2 bad input.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from passhat.cases import Suite, load_suite
from passhat.commands.common import suite_hint
from passhat.console import stderr_console
from passhat.errors import EXIT_FAILED, PasshatError
from passhat.models import SuiteInfo
from passhat.suites.changes import changed_cases, describe_changes
from passhat.suites.snapshot import (
    SuiteChanged,
    freeze,
    load_snapshot,
    snapshot_suite,
    suite_block,
    verify_snapshot,
    write_snapshot,
)


def _load(suite: str) -> Suite:
    """The suite, or a user error that points at FOLDER/cases when FOLDER is a suite's root."""
    try:
        return load_suite(suite)
    except PasshatError as exc:
        raise PasshatError(suite_hint(str(exc), suite)) from exc


@click.group("suite")
def suite_group() -> None:
    """Suite versions: content hashes, frozen snapshots, what changed."""


@suite_group.command("hash")
@click.argument("suite")
@click.option("--json", "json_out", is_flag=True, help="Print the hashes as JSON.")
def hash_command(suite: str, json_out: bool) -> None:
    """Show the suite hash with per-case, per-domain and per-fixture content hashes."""
    block = suite_block(_load(suite))
    if json_out:
        click.echo(json.dumps(block.model_dump(mode="json", exclude_unset=True), indent=2, ensure_ascii=False))
        return
    console = Console()
    console.print(f"[bold]{escape(block.name)}[/bold] suite hash {block.hash}", highlight=False)
    for name, h in block.domains.items():
        fixtures = ", ".join(f"{f} {fh[:12]}" for f, fh in block.fixtures.get(name, {}).items())
        console.print(escape(f"  domain {name}: {h[:16]} (fixtures: {fixtures})"), highlight=False)
    table = Table(box=None, pad_edge=False)
    for col in ("case", "split", "group", "content hash"):
        table.add_column(col)
    for cid, h in block.cases.items():
        meta = block.case_meta[cid]
        table.add_row(escape(cid), meta.split, escape(meta.group or ""), h[:16])
    console.print(table)


@suite_group.command("freeze")
@click.argument("suite")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="Snapshot file to write (.json, or .yaml).")
def freeze_command(suite: str, out: Path) -> None:
    """Write a snapshot of SUITE (case, fixture and domain hashes; passhat version) for `run --frozen`."""
    snapshot = freeze(_load(suite))
    write_snapshot(out, snapshot)
    s = snapshot_suite(snapshot)
    stderr_console().print(Text(f"froze {s.name} ({len(s.cases)} cases, hash {s.hash[:12]}) to {out}"),
                           highlight=False)


@suite_group.command("verify")
@click.argument("suite")
@click.option("--frozen", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True)
def verify_command(suite: str, frozen: Path) -> None:
    """Check that SUITE is exactly the frozen snapshot; exit 1 naming what changed."""
    loaded, snapshot = _load(suite), load_snapshot(frozen)
    try:
        verify_snapshot(loaded, snapshot, str(frozen))
    except SuiteChanged as exc:  # a verdict, not bad input
        stderr_console().print(Text.assemble(("differs:", "red"), " ", str(exc)), highlight=False)
        sys.exit(EXIT_FAILED)
    stderr_console().print(Text(f"{suite} matches {frozen}"), highlight=False)


def load_recording(ref: str) -> SuiteInfo:
    """The suite block of a run folder's manifest, of a snapshot file, or of a suite (built-in name or folder)."""
    path = Path(ref)
    if (path / "manifest.json").is_file():
        from passhat.runner.store import RunStore

        return RunStore(path).manifest().suite
    if path.is_file():
        return snapshot_suite(load_snapshot(path), str(path))
    return suite_block(load_suite(ref))


@suite_group.command("diff")
@click.argument("first")
@click.argument("second")
@click.option("--json", "json_out", is_flag=True, help="Print the result as JSON.")
def diff_command(first: str, second: str, json_out: bool) -> None:
    """Name the cases that differ between FIRST and SECOND (run folders, snapshot files or suites)."""
    result = changed_cases(load_recording(first), load_recording(second))
    if json_out:
        click.echo(json.dumps(dataclasses.asdict(result), indent=2, ensure_ascii=False))
        return
    text = describe_changes(result, limit=10_000)
    Console().print(Text(text or f"same suite content ({len(result.unchanged)} case(s) unchanged)"), highlight=False)
