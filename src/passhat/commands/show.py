"""``passhat show``: the summary of a run folder, read back or recomputed.

A finished run's summary.json is printed as passhat wrote it (``results.written``): parsed, not validated
again, with no statistics loaded — 10,000 cases × 16 trials show in well under the 2 s goal of issue 22.
``--validate`` reads it through its model first; ``--recompute`` (or ``--split``) rebuilds it from
trials.jsonl. If printing trips over a file that was edited by hand, it is validated then, so the error
names the file and the field.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from passhat.commands.common import err, fail
from passhat.errors import PasshatError

if TYPE_CHECKING:
    from passhat.runner import RunStore


@click.command()
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--by", "by", multiple=True, help="Break every figure down by this tag (repeatable; also split, group).")
@click.option("--split", "splits", multiple=True, type=click.Choice(["dev", "holdout", "regression"]),
              help="Only the cases of this split (repeatable: any of them).")
@click.option("--recompute", is_flag=True, help="Recompute from trials.jsonl even when summary.json is current.")
@click.option("--validate", is_flag=True,
              help="Check manifest.json and a current summary.json against their models before printing.")
def show(run_folder: Path, by: tuple[str, ...], splits: tuple[str, ...], recompute: bool, validate: bool) -> None:
    """Print the summary of RUN_FOLDER: its summary.json when that counts every record in trials.jsonl,
    otherwise recomputed from trials.jsonl."""
    from passhat.results.written import read_manifest_json, written_summary

    try:
        manifest = _validated_manifest(run_folder) if validate else read_manifest_json(run_folder)
        summary = None if recompute or splits else written_summary(run_folder, by)
        if summary is not None and validate:
            summary = _validated_summary(run_folder, summary)
        if summary is None:
            summary = _recomputed(run_folder, by, splits)
        _print(run_folder, summary, manifest, by)
    except PasshatError as exc:
        fail(str(exc))
        return


def _print(run_folder: Path, summary: dict[str, Any], manifest: dict[str, Any], by: tuple[str, ...]) -> None:
    """Render everything first, then write it: an unvalidated file that breaks the tables half-way is
    validated (naming the file and field) instead of leaving half a table on the terminal."""
    from rich.console import Console

    from passhat.report.notes import run_notes
    from passhat.report.terminal import print_summary

    console = Console()
    try:
        with console.capture() as captured:
            print_summary(summary, console, strata=by)
        notes = run_notes(summary, manifest)
        status = manifest.get("status")
        if status != "complete":
            recorded = sum(c["n"] + c["errors"] for c in summary["cases"])
            expected = summary["suite"]["cases"] * manifest["trials"]
            notes.append(f"[yellow]warning:[/yellow] this run is not complete (status {status!r}): "
                         f"{recorded} of {expected} trial(s) recorded; continue it with "
                         f"`passhat run … --resume --out {run_folder}`")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        _validated_manifest(run_folder)
        _validated_summary(run_folder, summary)
        raise
    sys.stdout.write(captured.get())
    sys.stdout.flush()
    for note in notes:
        err.print(note, highlight=False)


def _validated_manifest(run_folder: Path) -> dict[str, Any]:
    from passhat.runner.store import RunStore

    return RunStore(run_folder).manifest().to_dict()


def _validated_summary(run_folder: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` (the parsed summary.json, or a recomputed one) through ``models.Summary``; errors name the file."""
    from passhat.models import Summary

    return Summary.from_dict(summary, str(run_folder / "summary.json")).to_dict()


def _recomputed(run_folder: Path, by: tuple[str, ...], splits: tuple[str, ...]) -> dict[str, Any]:
    from passhat.runner.store import RunStore

    store = RunStore(run_folder)
    return summary_of_splits(store, store.read_manifest(), by, splits)


def summary_of_splits(store: RunStore, manifest: dict[str, Any], by: tuple[str, ...],
                      splits: tuple[str, ...]) -> dict[str, Any]:
    """The summary of the run's cases in any of ``splits`` (all cases when empty); no such case is bad input.

    Reads only the fields a summary uses from trials.jsonl (``tally_records``), not whole trajectories.
    """
    from passhat.results.summary import build_summary
    from passhat.results.tally import tally_records

    records = tally_records(store.trials_path)
    if not splits:
        return build_summary(records, manifest, by=by)
    meta = manifest["suite"].get("case_meta", {})
    chosen = {cid: h for cid, h in manifest["suite"]["cases"].items() if meta.get(cid, {}).get("split") in splits}
    if not chosen:
        present = sorted({m.get("split") for m in meta.values() if m.get("split")})
        raise PasshatError(f"{store.folder}: no case of this run is in split {'|'.join(splits)} "
                           f"(splits present: {', '.join(present) or 'none recorded'})")
    if len(splits) == 1:
        return build_summary(records, manifest, by=by, split=splits[0])
    chosen_only = {**manifest, "suite": {**manifest["suite"], "cases": chosen}}
    summary = build_summary((r for r in records if r.case_id in chosen), chosen_only, by=by)
    summary["suite"]["split"] = "|".join(splits)
    return summary
