"""``passhat init FOLDER``: write a starter suite that runs as written, to edit into your own."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("init")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
def init_command(folder: Path, force: bool) -> None:
    """Create a starter suite in FOLDER: domain.py, schema, fixture, policy, three cases and an agent."""
    from passhat.scaffold import create_suite

    written = create_suite(folder, force=force)
    click.echo(f"wrote {len(written)} files to {folder}. Next:\n"
               f"  cd {folder} && passhat run cases --agent agent.py:agent --trials 4")
