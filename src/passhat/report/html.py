"""``RUN/report.html``: one self-contained page per run, with trajectories loaded on demand.

The page inlines its CSS, JavaScript and SVG figures (no CDN, no fetched library), so it works offline
and from ``file://``. It holds only summaries — curves, strata, distributions, the case table — and
loads a case's trials from ``RUN/report/trials/VERSION/cNNNNN.js`` when the case is expanded (see
:mod:`passhat.report.trials` for why script files). A 10,000-trial run therefore opens as fast as a
small one. Records are read once, streamed: chunks are written and the summary is built in the same pass.

Nothing is half-written: the chunks go to a folder of their own, the page is written atomically
(:func:`passhat.report.files.write_atomic`) only once they are complete, and the previous report's
chunks are removed only after that. A report killed or out of disk space at any point leaves the
previous report whole (or none).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache

from passhat.gate.stored import read_gate_result
from passhat.metric_names import shown_ks
from passhat.models import CaseSummary, Comparison, GateResult, Interval, Manifest, Summary
from passhat.report import figures
from passhat.report.files import write_atomic
from passhat.report.headline import ANCHORS, DEFINITIONS, DOCS, LABELS, headline
from passhat.report.trials import TrialData, chunk_json
from passhat.results import build_summary, read_current_summary, tag_keys
from passhat.runner.store import RunStore

REPORT = "report.html"


@dataclass(frozen=True)
class ReportFiles:
    """What was written: the page, its size, and the bytes of trial data the page loads on demand."""

    path: Path
    page_bytes: int
    lazy_bytes: int
    trials: int


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """The templates as jinja2 compiled them, kept between processes: compiling ``report.html.j2`` is ~0.2 G
    instructions, 6 % of a short ``passhat run`` (docs/design/041). An entry is used only for the same template
    source (jinja2's checksum), jinja2 and Python (its header), and the same :func:`environment` (the folder is
    named by this file's hash); a cache that cannot be read or written is no cache, never a failed report."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - unreadable or cut short (pickle's, marshal's errors): compiled again
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)  # a temporary file renamed into place: a reader sees all of it or none
        except OSError:
            pass


def _compiled_templates() -> jinja2.BytecodeCache | None:
    """``$XDG_CACHE_HOME/passhat/templates/HASH`` (else ``~/.cache/...``); None where it cannot be made, or
    where another user could write to it (compiled code is run from it, as sandbox/native.py's PID 1 is)."""
    from passhat.sandbox.native import unsafe_folder

    this = hashlib.sha256(Path(__file__).read_bytes() + jinja2.__version__.encode()).hexdigest()[:16]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "passhat", "templates", this)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if unsafe_folder(folder) is not None:
            return None
    except OSError:
        return None
    return _CompiledTemplates(folder)


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("passhat.report", "templates"),
                             autoescape=jinja2.select_autoescape(default=True), trim_blocks=True, lstrip_blocks=True,
                             bytecode_cache=_compiled_templates())
    env.globals["asset"] = asset
    env.filters["num"] = lambda x, d=3: "—" if x is None or isinstance(x, jinja2.Undefined) else f"{x:.{d}f}"
    env.filters["json"] = chunk_json
    return env


@cache
def asset(name: str) -> str:
    """A static file's text, inlined into the page (CSS and JS live beside the templates as package data)."""
    return (files("passhat.report") / "static" / name).read_text("utf-8")




def write_report(folder: Path, *, summary: Summary | None = None) -> ReportFiles:
    """Write ``report.html`` and its trial chunks for the run in ``folder``; returns what was written.

    The summary is taken from ``summary`` or from ``summary.json`` when that is current (the summary of
    exactly the records now in ``trials.jsonl``, with a stratum for every tag key); otherwise it is
    rebuilt from the records, stratified by every tag key, in the same streaming pass that writes the
    chunks. A stale ``summary.json`` (the run resumed or edited after it was written, another run's file
    copied in) would put numbers on the page that its trials do not show.
    """
    folder = Path(folder)
    store = RunStore(folder)
    manifest = store.manifest()
    keys = tag_keys(manifest)
    summary = summary if summary is not None else read_current_summary(folder, keys)
    data = TrialData(folder)
    data.reset(manifest.suite.cases)
    try:
        if summary is None or (keys and not summary.strata):
            summary = build_summary(data.tee(store.iter_records()), manifest, by=keys)
        else:
            data.copy_lines(store.trials_path)
        html = render_report(summary, manifest, data, title=folder.name, gate=read_gate_result(folder))
        page = html.encode("utf-8")
        write_atomic(folder / REPORT, page)
    except BaseException:
        data.discard()
        raise
    data.prune()
    return ReportFiles(folder / REPORT, len(page), data.lazy_bytes, sum(data.trials.values()))


def untested_notes(c: CaseSummary) -> list[str]:
    """Why some of a case's trials did not test a planned fault: it did not apply, or no call reached it."""
    return [*(f"{why} — did not apply in {k} of {c.n + c.errors} trial(s)" for why, k in c.faults_not_applied.items()),
            *(f"{fault} — never reached in {k} of {c.n} graded trial(s)" for fault, k in c.faults_not_reached.items())]


def case_rows(summary: Summary, data: TrialData, ks: list[int], manifest: Manifest) -> list[dict[str, Any]]:
    """The case table; ``faults`` (the case's planned faults, from the manifest) lets a trial's view say which of
    them no call of that trial reached."""
    rows = []
    for c in summary.cases:
        cats = c.failure_categories
        rows.append({
            "id": c.id, "c": c.successes, "n": c.n, "errors": c.errors,
            "state": "pass" if c.passed_every_trial else ("fail" if c.successes == 0 else "mixed"),
            "wilson": None if c.wilson_low is None else (c.wilson_low, c.wilson_high),
            "pass_hat_k": [c.pass_hat_k.get(k) for k in ks],
            "category": next(iter(cats), None), "categories": cats,
            "tags": " ".join(f"{k}={v}" for k, v in c.tags.items()),
            "chunk": data.chunk_path(c.id) if c.id in data.case_index else None,
            "trials": data.trials.get(c.id, 0),
            "untested": untested_notes(c), "faults": manifest.case_meta(c.id).faults,
        })
    return rows


def strata_figures(summary: Summary, n: int) -> list[dict[str, Any]]:
    """Per tag key: pass^1 and pass^n with intervals for each value of the tag."""
    out = []
    for key, values in summary.strata.items():
        rows: list[tuple[str, Interval | None, Interval | None]] = [
            (f"{value} ({block.cases})", block.pass_hat_k.get(1), block.pass_hat_k.get(n) if n > 1 else None)
            for value, block in values.items()]
        if rows:
            out.append({"key": key, "svg": figures.interval_svg(rows, labels=("pass^1", f"pass^{n}"))})
    return out


def render_report(summary: Summary, manifest: Manifest, data: TrialData, *, title: str,
                  gate: GateResult | None = None) -> str:
    """The page as a string (``write_report`` does the I/O): the headline first, then the gate's verdict
    and every rule when the run was gated (``gate.json``), then the figures and the cases."""
    suite = summary.suite
    n = suite.trials_per_case or max((c.n for c in summary.cases), default=1)
    ks = shown_ks(n)
    return environment().get_template("report.html.j2").render(
        title=title, suite=suite, agent=summary.agent, manifest=manifest, n=n, ks=ks,
        curve=figures.curve_svg(suite, n), strata=strata_figures(summary, n),
        categories=figures.bars_svg(suite.failure_categories),
        latency=figures.histogram_svg(data.latencies, "s"), cost=figures.histogram_svg(data.costs, "$"),
        exp=suite.experience, rows=case_rows(summary, data, ks, manifest), version=data.version,
        hat_curve=[(k, suite.pass_hat_k.get(k)) for k in ks],
        headline=headline(summary), gate=gate, definitions=DEFINITIONS, anchors=ANCHORS, docs=DOCS,
        labels={k: v[0].upper() + v[1:] for k, v in LABELS.items()},
    )


def render_compare_html(result: Comparison) -> str:
    """The comparison page for ``passhat compare --html`` (see :mod:`passhat.report.compare_html`)."""
    from passhat.report.compare_html import render

    return render(result)
