"""``passhat cases from-failure RUN CASE TRIAL --out FILE``."""

from __future__ import annotations

from pathlib import Path

import click


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

    data = regression_case(run_folder, case_id, trial, out_file, suite_ref)
    write_regression_case(data, out_file)
    click.echo(f"wrote {out_file} ({data['id']}, split regression)")
