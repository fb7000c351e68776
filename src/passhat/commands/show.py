"""``passhat show``: the summary of a run folder, read back or recomputed.

A finished run's summary.json is printed when it is current (``results.written``): read through
``models.Summary`` from its bytes, like manifest.json through ``models.Manifest``, with no statistics
loaded — 10,000 cases × 16 trials show in about 0.6 s, under the 2 s goal of issue 22 (docs/design/030).
A file edited by hand into another shape is refused, naming the file and the field. ``--recompute``
(or ``--split``) rebuilds the summary from trials.jsonl.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from passhat.commands.common import fail, stderr
from passhat.errors import PasshatError

if TYPE_CHECKING:
    from passhat.models import Manifest, Summary
    from passhat.runner import RunStore


@click.command()
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--by", "by", multiple=True, help="Break every figure down by this tag (repeatable; also split, group).")
@click.option("--split", "splits", multiple=True, type=click.Choice(["dev", "holdout", "regression"]),
              help="Only the cases of this split (repeatable: any of them).")
@click.option("--recompute", is_flag=True, help="Recompute from trials.jsonl even when summary.json is current.")
@click.option("--validate", is_flag=True, hidden=True,
              help="Kept for scripts: manifest.json and summary.json are always checked against their models now.")
def show(run_folder: Path, by: tuple[str, ...], splits: tuple[str, ...], recompute: bool, validate: bool) -> None:
    """Print the summary of RUN_FOLDER: its summary.json when that counts every record in trials.jsonl,
    otherwise recomputed from trials.jsonl."""
    from passhat.models import Manifest

    try:
        manifest = Manifest.of_run(run_folder)
        summary = None if recompute or splits else _written(run_folder, by)
        if summary is None:
            summary = _recomputed(run_folder, manifest, by, splits)
        _print(run_folder, summary, manifest, by)
    except PasshatError as exc:
        fail(str(exc))
        return


def _written(run_folder: Path, by: tuple[str, ...]) -> Summary | None:
    from passhat.models import FileFormatError
    from passhat.results.written import written_summary

    try:
        return written_summary(run_folder, by)
    except FileFormatError as exc:
        raise PasshatError(f"{exc}; `passhat show --recompute` recomputes it from trials.jsonl") from None


def _print(run_folder: Path, summary: Summary, manifest: Manifest, by: tuple[str, ...]) -> None:
    """Render everything first, then write it: nothing is left half-printed by an error."""
    from rich.console import Console

    from passhat.report.notes import run_notes
    from passhat.report.terminal import print_summary

    console = Console()
    with console.capture() as captured:
        print_summary(summary, console, strata=by)
    notes = run_notes(summary, manifest)
    if manifest.status != "complete":
        recorded = sum(c.n + c.errors for c in summary.cases)
        expected = summary.suite.cases * manifest.trials
        notes.append(f"[yellow]warning:[/yellow] this run is not complete (status {manifest.status!r}): "
                     f"{recorded} of {expected} trial(s) recorded; continue it with "
                     f"`passhat run … --resume --out {run_folder}`")
    sys.stdout.write(captured.get())
    sys.stdout.flush()
    for note in notes:
        stderr().print(note, highlight=False)


def _recomputed(run_folder: Path, manifest: Manifest, by: tuple[str, ...], splits: tuple[str, ...]) -> Summary:
    from passhat.runner.store import RunStore

    return summary_of_splits(RunStore(run_folder), manifest, by, splits)


def summary_of_splits(store: RunStore, manifest: Manifest, by: tuple[str, ...], splits: tuple[str, ...]) -> Summary:
    """The summary of the run's cases in any of ``splits`` (all cases when empty); no such case is bad input.

    Reads only the fields a summary uses from trials.jsonl (``tally_records``), not whole trajectories.
    """
    from passhat.results.summary import build_summary
    from passhat.results.tally import tally_records

    if splits and not any(manifest.case_meta(cid).split in splits for cid in manifest.suite.cases):
        present = sorted({m.split for m in manifest.suite.case_meta.values() if m.split})
        raise PasshatError(f"{store.folder}: no case of this run is in split {'|'.join(splits)} "
                           f"(splits present: {', '.join(present) or 'none recorded'})")
    return build_summary(tally_records(store.trials_path), manifest, by=by, splits=splits)
