"""``passhat export-otlp RUN --endpoint URL``: send an existing run's traces to an OTLP/HTTP collector.

Exit codes: 0 every trace accepted, 2 otherwise (not a run folder, bad URL, extra not installed,
endpoint unreachable or refusing) — the message says which.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from passhat.errors import PasshatError

EXIT_BAD_INPUT = 2


def _headers(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r}: expected KEY=VALUE", param_hint="--header")
        out[key.strip()] = value.strip()
    return out


@click.command("export-otlp")
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--endpoint", required=True, help="OTLP/HTTP URL, e.g. http://127.0.0.1:4318 (/v1/traces is added).")
@click.option("--header", "header", multiple=True, metavar="KEY=VALUE",
              help="HTTP header for the collector, e.g. Authorization=... (repeatable; OTEL_EXPORTER_OTLP_HEADERS also works).")
@click.option("--no-content", is_flag=True, help="Leave tool arguments and results out of the spans.")
@click.option("--timeout", type=click.FloatRange(0.1), default=10.0, show_default=True, help="Seconds per request.")
def export_otlp(run_folder: Path, endpoint: str, header: tuple[str, ...], no_content: bool, timeout: float) -> None:
    """Export every trial of RUN_FOLDER as an OpenTelemetry trace (GenAI semantic conventions)."""
    from passhat.export import export_run

    try:
        stats = export_run(run_folder, endpoint, headers=_headers(header) or None, timeout=timeout,
                           include_content=not no_content)
    except PasshatError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"{stats.traces} trace(s), {stats.spans} span(s) sent to {stats.endpoint}")
