"""``passhat view [FOLDER]``: browse a folder of runs from a local web server (127.0.0.1 only).

The index lists every run folder found up to ``MAX_DEPTH`` levels down with its suite, agent, pass^1
and date; each links to the run's ``report.html``, which is generated on the request when it is missing
or older than the run's records (a resumed or re-summarized run). Everything else is served as static
files by the standard library, path-traversal checks included; nothing leaves the machine.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from passhat.errors import PasshatError
from passhat.models import FileModel, Interval, Manifest, Summary
from passhat.report.html import REPORT, environment, write_report
from passhat.runner.store import MANIFEST, SUMMARY, TRIALS

MAX_DEPTH = 3
File = TypeVar("File", bound=FileModel)


@dataclass(frozen=True)
class RunEntry:
    """One run as the index shows it."""

    path: str
    """Relative to the served folder, with forward slashes."""
    suite: str
    agent: str
    pass_hat_1: Interval | None
    trials: int | None
    started_at: str
    status: str


def _read(model: type[File], path: Path) -> File | None:
    """A run file through its model; None when missing, unreadable or of another version."""
    try:
        return model.load(path)
    except (OSError, PasshatError):
        return None


def find_runs(root: Path) -> list[RunEntry]:
    """Run folders (those with a manifest) under ``root``, newest first."""
    runs = []
    for depth in range(MAX_DEPTH + 1):
        for manifest_path in sorted(root.glob("/".join(["*"] * depth + [MANIFEST]))):
            manifest = _read(Manifest, manifest_path)
            if manifest is None:
                continue
            summary = _read(Summary, manifest_path.parent / SUMMARY)
            suite = summary.suite if summary is not None else None
            rel = manifest_path.parent.relative_to(root).as_posix()
            runs.append(RunEntry(
                path="" if rel == "." else rel, suite=manifest.suite.name, agent=manifest.agent,
                pass_hat_1=suite.pass_hat_k.get(1) if suite else None, trials=suite.trials if suite else None,
                started_at=manifest.started_at or "", status=manifest.status,
            ))
    return sorted(runs, key=lambda r: r.started_at, reverse=True)


def render_index(root: Path) -> str:
    return environment().get_template("index.html.j2").render(root=str(root.resolve()), runs=find_runs(root))


def report_is_stale(run: Path) -> bool:
    """True when report.html is missing or older than the records or summary it shows."""
    report = run / REPORT
    if not report.exists():
        return True
    built = report.stat().st_mtime
    return any((run / name).exists() and (run / name).stat().st_mtime > built for name in (TRIALS, SUMMARY, MANIFEST))


class RunsHandler(SimpleHTTPRequestHandler):
    """Static files, plus the index at ``/`` and reports made on first request."""

    lock = threading.Lock()

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = unquote(urlsplit(self.path).path)
        root = Path(self.directory)
        if path in ("/", "/index.html") and not (root / "index.html").exists():
            return self._send_html(render_index(root))
        if path.endswith("/" + REPORT):
            run = Path(self.translate_path(path)).parent
            if (run / MANIFEST).exists() and run.resolve().is_relative_to(root.resolve()):
                with self.lock:  # two tabs must not write the same report at once
                    if report_is_stale(run):
                        try:
                            write_report(run)
                        except PasshatError as exc:
                            return self.send_error(500, f"cannot build the report of {run}: {exc}")
        return super().do_GET()

    def _send_html(self, html: str) -> None:
        body = html.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (signature of the base class)
        """Quiet by default: the terminal shows the URL, not every request."""


def make_server(root: Path, port: int = 8765, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A server for ``root`` bound to ``host`` (loopback unless the caller insists); port 0 picks a free one."""
    handler = partial(RunsHandler, directory=str(root))
    return ThreadingHTTPServer((host, port), handler)
