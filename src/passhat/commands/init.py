"""``passhat init FOLDER``: write a starter suite that runs as written, to edit into your own."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("init")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
@click.option("--from-mcp", "from_mcp", metavar="'stdio:COMMAND' | URL",
              help="Build the suite around your MCP server: its tools, and (with --db) your database.")
@click.option("--db", metavar="URL|PATH", help="With --from-mcp: the database the server works on (a SQLite file or "
                                               "a postgresql:// URL); its schema and rows become the fixture.")
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE", help="With --from-mcp: the server's environment.")
def init_command(folder: Path, force: bool, from_mcp: str | None, db: str | None, env: tuple[str, ...]) -> None:
    """Create a starter suite in FOLDER: domain.py, schema, fixture, policy, three cases and an agent.

    With --from-mcp, the domain is your MCP server's tools on a private copy of your database per trial,
    with one case per write tool and a lost-response variant of each."""
    if from_mcp is None:
        if db is not None or env:
            raise click.UsageError("--db and --env go with --from-mcp")
        from passhat.scaffold import create_suite

        written = create_suite(folder, force=force)
    else:
        from passhat.scaffold.from_mcp import create_from_mcp

        bad = [e for e in env if "=" not in e or e.startswith("=")]
        if bad:
            raise click.BadParameter(f"{bad[0]!r} is not NAME=VALUE", param_hint="--env")
        written = create_from_mcp(folder, from_mcp, db=db, env=dict(e.split("=", 1) for e in env), force=force)
    click.echo(f"wrote {len(written)} files to {folder}. Next:\n"
               f"  cd {folder} && passhat cases lint cases && passhat run cases --agent agent.py:agent --trials 4")
