"""``passhat export-otlp RUN --endpoint URL``: send an existing run's traces to an OTLP/HTTP collector
(or ``--file FILE``: write them as OTLP/JSON, one trace per line).

Exit codes: 0 every trace accepted (or written), 2 otherwise (not a run folder, bad URL, extra not
installed, endpoint unreachable or refusing, file not writable) — the message says which.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import click

from passhat.commands.common import FiniteFloat
from passhat.errors import PasshatError


def _headers(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r}: expected KEY=VALUE", param_hint="--header")
        out[key.strip()] = value.strip()
    return out


@contextmanager
def quiet_exporter_logs() -> Iterator[None]:
    """The OTLP exporter logs every retry ("Transient error … retrying") to stderr; passhat reports the
    outcome itself in one line naming the endpoint, so its log lines are held back while we export."""
    logger = logging.getLogger("opentelemetry")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def check_otlp_url(url: str, option: str) -> None:
    """A malformed collector URL is bad input at once (for ``run --otlp``: before the first trial, not a
    warning after the whole run)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PasshatError(f"{option} {url!r}: expected an http(s) URL such as http://127.0.0.1:4318")


def _endpoint(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        check_otlp_url(value, "--endpoint")
    except PasshatError as exc:
        raise click.BadParameter(str(exc).split(": ", 1)[1], ctx, param) from None
    return value


@click.command("export-otlp")
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--endpoint", callback=_endpoint,
              help="OTLP/HTTP URL, e.g. http://127.0.0.1:4318 (/v1/traces is added).")
@click.option("--file", "file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Instead of sending: write the traces here as OTLP/JSON, one trace per line (what `passhat shadow` "
                   "reads; arguments, results and messages are not cut).")
@click.option("--header", "header", multiple=True, metavar="KEY=VALUE",
              help="HTTP header for the collector, e.g. Authorization=... (repeatable; OTEL_EXPORTER_OTLP_HEADERS also works).")
@click.option("--no-content", is_flag=True, help="Leave tool arguments and results out of the spans.")
@click.option("--timeout", type=FiniteFloat(0.1), default=10.0, show_default=True, help="Seconds per request.")
def export_otlp(run_folder: Path, endpoint: str | None, file: Path | None, header: tuple[str, ...], no_content: bool,
                timeout: float) -> None:
    """Export every trial of RUN_FOLDER as an OpenTelemetry trace (GenAI semantic conventions)."""
    from passhat.export import export_run, write_run_json

    if (endpoint is None) == (file is None):
        raise click.UsageError("give --endpoint URL (send to a collector) or --file FILE (write OTLP/JSON), not both")
    if file is not None:
        traces = write_run_json(run_folder, file, include_content=not no_content)
        click.echo(f"{traces} trace(s) written to {file}")
        return
    assert endpoint is not None

    with quiet_exporter_logs():
        stats = export_run(run_folder, endpoint, headers=_headers(header) or None, timeout=timeout,
                           include_content=not no_content)
    click.echo(f"{stats.traces} trace(s), {stats.spans} span(s) sent to {stats.endpoint}")
