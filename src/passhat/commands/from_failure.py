"""``passhat cases from-failure RUN CASE TRIAL --out FILE``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from passhat.errors import PasshatError
from passhat.runner.store import RunStore


def _what_failed(run_folder: Path, case_id: str) -> str:
    """For a trial that is not there or did not fail: the failed trials there are, to pick from."""
    failed: dict[str, list[int]] = {}
    for r in RunStore(run_folder).iter_records():
        if r.outcome == "fail":
            failed.setdefault(r.case_id, []).append(r.trial)
    if case_id in failed:
        return f"; failed trials of {case_id!r}: {', '.join(map(str, sorted(failed[case_id])))}"
    if failed:
        shown = sorted(failed)[:20]
        more = f" and {len(failed) - len(shown)} more" if len(failed) > len(shown) else ""
        return f"; cases with failed trials: {', '.join(shown)}{more}"
    return "; no trial of this run failed"


@click.command("from-failure")
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("case_id")
@click.argument("trial", type=int)
@click.option("--out", "out_file", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="Case file to write (put it in a suite folder to run it).")
@click.option("--suite", "suite_ref", default=None, help="Suite to read the case from (default: the run's).")
def from_failure(run_folder: Path, case_id: str, trial: int, out_file: Path, suite_ref: str | None) -> None:
    """Turn failed TRIAL of CASE_ID in RUN_FOLDER into a regression case file."""
    from passhat.regression import regression_case, write_regression_case

    try:
        RunStore(run_folder).read_manifest()  # "not a run folder" before "no such trial"
    except PasshatError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    try:
        data = regression_case(run_folder, case_id, trial, out_file, suite_ref)
    except PasshatError as exc:
        click.echo(f"error: {exc}{_what_failed(run_folder, case_id)}", err=True)
        sys.exit(2)
    write_regression_case(data, out_file)
    click.echo(f"wrote {out_file} ({data['id']}, split regression)")
