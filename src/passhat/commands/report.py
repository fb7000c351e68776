"""``passhat report RUN``: write ``RUN/report.html``; also what ``passhat run`` does once its summary is written.

Exit codes: 0 report written, 2 bad input (not a run folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from passhat.errors import PasshatError

if TYPE_CHECKING:
    from passhat.models import Summary


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc) if isinstance(exc, PasshatError) else f"{type(exc).__name__}: {exc}"


def _size(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"


@click.command("report")
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--open", "open_browser", is_flag=True, help="Open the report in the default browser.")
def report(run_folder: Path, open_browser: bool) -> None:
    """Write RUN_FOLDER/report.html: curves, strata, cases, and every trajectory (loaded on demand)."""
    from passhat.report.html import write_report

    written = write_report(run_folder)
    click.echo(f"{written.path} ({_size(written.page_bytes)}; {written.trials} trial(s), "
               f"{_size(written.lazy_bytes)} loaded on demand from {written.path.parent / 'report'})")
    if open_browser:
        import webbrowser

        webbrowser.open(written.path.resolve().as_uri())


def after_run(folder: Path, summary: Summary, *, html: bool, otlp: str | None) -> None:
    """The report and the OTLP export at the end of ``passhat run``, after the gate has decided.

    Neither changes the run's exit code: the records, summary, gate result and CI outputs are already
    on disk, and a full disk or a collector that is down must not fail a build whose gate passed (nor
    pass one that failed). A failure is printed with the command that redoes the step.
    """
    if html:
        from passhat.report.html import write_report  # jinja2 and the templates: only for a report

        try:
            written = write_report(folder, summary=summary)
            click.echo(f"report: {written.path}", err=True)
        except Exception as exc:  # whatever broke the view of the run, the run itself is done
            click.echo(f"warning: no report written ({_reason(exc)}); retry with: passhat report {folder}", err=True)
    if otlp:
        from passhat.commands.export import quiet_exporter_logs
        from passhat.export import ExportError, export_run

        try:
            with quiet_exporter_logs():
                stats = export_run(folder, otlp)
            click.echo(f"OTLP: {stats.traces} trace(s), {stats.spans} span(s) sent to {stats.endpoint}", err=True)
        except ExportError as exc:
            click.echo(f"warning: traces not exported: {exc}; retry with: passhat export-otlp {folder} --endpoint {otlp}",
                       err=True)
