"""``passhat show``: the summary of a run folder, recomputed or read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from passhat.commands.common import err, fail
from passhat.errors import PasshatError
from passhat.report.terminal import print_summary
from passhat.results import build_summary, read_current_summary
from passhat.results.tally import tally_records
from passhat.runner import RunStore
from passhat.suites.plan import run_notes


@click.command()
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--by", "by", multiple=True, help="Break every figure down by this tag (repeatable; also split, group).")
@click.option("--split", "splits", multiple=True, type=click.Choice(["dev", "holdout", "regression"]),
              help="Only the cases of this split (repeatable: any of them).")
@click.option("--recompute", is_flag=True, help="Recompute from trials.jsonl even when summary.json is current.")
def show(run_folder: Path, by: tuple[str, ...], splits: tuple[str, ...], recompute: bool) -> None:
    """Print the summary of RUN_FOLDER: its summary.json when that counts every record in trials.jsonl,
    otherwise recomputed from trials.jsonl."""
    store = RunStore(run_folder)
    try:
        model = store.manifest()
        manifest = model.to_dict()
        current = None if recompute or splits else read_current_summary(run_folder, by)
        summary = current.to_dict() if current is not None else summary_of_splits(store, manifest, by, splits)
    except PasshatError as exc:
        fail(str(exc))
        return
    print_summary(summary, Console(), strata=by)
    for note in run_notes(summary, manifest):
        err.print(note, highlight=False)
    if model.status != "complete":
        recorded = sum(c["n"] + c["errors"] for c in summary["cases"])
        expected = summary["suite"]["cases"] * model.trials
        err.print(f"[yellow]warning:[/yellow] this run is not complete (status {model.status!r}): "
                  f"{recorded} of {expected} trial(s) recorded; continue it with "
                  f"`passhat run … --resume --out {run_folder}`", highlight=False)


def summary_of_splits(store: RunStore, manifest: dict[str, Any], by: tuple[str, ...],
                      splits: tuple[str, ...]) -> dict[str, Any]:
    """The summary of the run's cases in any of ``splits`` (all cases when empty); no such case is bad input.

    Reads only the fields a summary uses from trials.jsonl (``tally_records``), not whole trajectories.
    """
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
