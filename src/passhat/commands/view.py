"""``passhat view [FOLDER]``: serve a folder of runs on 127.0.0.1 with an index and their reports."""

from __future__ import annotations

import webbrowser
from pathlib import Path

import click

from passhat.errors import PasshatError


@click.command("view")
@click.argument("folder", default="runs", type=click.Path(path_type=Path, file_okay=False))
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0 picks a free port.")
@click.option("--open", "open_browser", is_flag=True, help="Open the index in the default browser.")
def view(folder: Path, port: int, open_browser: bool) -> None:
    """Serve FOLDER (default: runs) locally: an index of its runs, each linking to its report.

    Reports are generated when first opened, or again when the run changed since. The server listens
    on 127.0.0.1 only; stop it with Ctrl-C.
    """
    from passhat.report.view import make_server

    if not folder.is_dir():
        raise PasshatError(f"{folder} is not a folder (pass a folder of runs, e.g. runs/)")
    try:
        server = make_server(folder, port)
    except OSError as exc:
        raise PasshatError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}; try --port 0") from exc
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    click.echo(f"serving {folder.resolve()} at {url} (Ctrl-C to stop)")
    if open_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
