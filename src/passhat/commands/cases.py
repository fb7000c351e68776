"""``passhat cases lint`` and ``passhat cases import`` (registered on the ``cases`` group in cli.py).

Exit codes: 0 clean (warnings alone are clean unless ``--strict``), 1 findings, 2 bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from passhat.commands.common import FiniteFloat, suite_hint
from passhat.console import stderr_console
from passhat.errors import EXIT_FAILED, EXIT_OK, PasshatError
from passhat.lint import LintReport, lint_suite
from passhat.lint.similarity import THRESHOLD


def print_report(report: LintReport, console: Console, strict: bool) -> None:
    """Findings first (errors, then warnings), then coverage by split, tag and tool."""
    for f in report.findings:
        style = "red" if f.severity == "error" else "yellow"
        console.print(f"[{style}]{f.severity}[/{style}] [bold]{f.code}[/bold] {escape(f.file)}"
                      f"{': ' + escape(f.field) if f.field else ''}: {escape(f.message)}", highlight=False, soft_wrap=True)
    cov = report.coverage
    console.print(f"\n[bold]{escape(report.suite)}[/bold]: {report.cases} case file(s) · "
                  + " · ".join(f"{s} {n}" for s, n in cov.get("splits", {}).items())
                  + f" · {cov.get('families', 0)} {'family' if cov.get('families') == 1 else 'families'} "
                  f"covering {cov.get('cases_in_families', 0)} case(s)",
                  highlight=False)
    for key, values in cov.get("tags", {}).items():
        console.print(escape(f"  tag {key}: " + ", ".join(f"{v} {n}" for v, n in values.items())), highlight=False)
    tools = Table(title="tools (cases exercising each: required / ordered / faulted / forbidden)", title_justify="left")
    for col in ("tool", "kind", "cases", "required", "ordered", "faulted", "forbidden"):
        tools.add_column(col, justify="left" if col in ("tool", "kind") else "right")
    for name, t in cov.get("tools", {}).items():
        kind = t["kind"] + (" external" if t["external"] else "")
        tools.add_row(escape(name), kind, *(str(t[k]) for k in ("cases", "required", "ordered", "faulted", "forbidden")),
                      style="dim" if t["cases"] == 0 else None)
    if cov.get("tools"):
        console.print(tools)
    if cov.get("unexercised_tools"):
        console.print(escape(f"not exercised by any case: {', '.join(cov['unexercised_tools'])}"), highlight=False)
    verdict = "ok" if report.ok(strict) else "FAILED"
    style = "green" if report.ok(strict) else "red"
    console.print(f"[{style}]{verdict}[/{style}]: {len(report.errors)} error(s), {len(report.warnings)} warning(s)"
                  + (" (--strict: warnings fail)" if strict else ""), highlight=False)


@click.command("lint")
@click.argument("suite")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@click.option("--threshold", type=FiniteFloat(0.5, 1.0), default=THRESHOLD, show_default=True,
              help="Instruction similarity at which cases in different splits are flagged as probable leaks.")
@click.option("--json", "json_out", is_flag=True, help="Print the report as JSON.")
def lint_command(suite: str, strict: bool, threshold: float, json_out: bool) -> None:
    """Check SUITE (a built-in name or a folder): schema, references, ids, leaks, grading, coverage."""
    report = lint_suite(suite, threshold=threshold)
    if report.cases == 0:  # an empty folder is not a suite (exit 2, as documented), not a suite with findings
        raise PasshatError(suite_hint(f"{suite}: no case files (*.yaml) in this folder", suite))
    if json_out:
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        print_report(report, Console(), strict)
    sys.exit(EXIT_OK if report.ok(strict) else EXIT_FAILED)


@click.command("import")
@click.argument("source", type=click.Path(path_type=Path, exists=True))
@click.option("--format", "fmt", type=click.Choice(["requests", "tau-bench", "tau2-bench"]), default="requests",
              show_default=True,
              help="requests: SOURCE is a JSONL file of real requests; tau-bench: SOURCE is a checkout of "
                   "sierra-research/tau-bench; tau2-bench: a checkout of sierra-research/tau2-bench.")
@click.option("--domain", help="Domain of the cases: a built-in name, module:attr or a .py path (requests).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False),
              help="Folder for the skeletons (requests, required) or the suites (tau-bench, default ./tau-bench; "
                   "tau2-bench, default ./tau2-bench).")
@click.option("--tasks", default=None,
              help="Which tasks to import: tasks_TASKS.py of each environment (tau-bench, default test), or a split "
                   "of each domain's split_tasks.json (tau2-bench, default base: every task).")
@click.option("--no-redact", is_flag=True, help="Keep e-mail, phone and card numbers (default: redacted; requests).")
def import_command(source: Path, fmt: str, domain: str | None, out: Path | None, tasks: str | None,
                   no_redact: bool) -> None:
    """Turn SOURCE into cases: real requests (JSONL) into skeletons, or a τ-bench checkout into suites.

    With --format tau-bench, each environment of the checkout (retail, airline) becomes OUT/ENV: a domain
    that runs τ-bench's own tools on its data, and one case per task (docs/tau-bench.md).
    """
    if fmt in ("tau-bench", "tau2-bench"):
        if domain is not None:
            raise click.UsageError(f"--domain is for --format requests; a {fmt} import writes its own domain")
        if fmt == "tau-bench":
            _import_tau_bench(source, out or Path("tau-bench"), tasks or "test")
        else:
            _import_tau2_bench(source, out or Path("tau2-bench"), tasks or "base")
        return
    if domain is None or out is None:
        raise click.UsageError("--format requests needs --domain and --out")
    if source.is_dir():
        raise click.UsageError(f"{source} is a folder; --format requests reads a JSONL file (for a τ-bench checkout, "
                               "give --format tau-bench)")
    from passhat.cases.importer import import_requests
    from passhat.redaction import Redactor

    result = import_requests(source, domain, out, redactor=Redactor(enabled=not no_redact))
    err = stderr_console()
    err.print(escape(f"wrote {len(result.written)} skeleton(s) to {out} (tags: source=production, split: dev); "
                     f"finish the TODOs, then `passhat cases lint {out}`"), highlight=False)
    if result.ignored_fields:
        err.print(escape("ignored fields: " + ", ".join(f"{k} ({n} line(s))" for k, n in result.ignored_fields.items())),
                  highlight=False)


def _import_tau2_bench(checkout: Path, out: Path, tasks: str) -> None:
    from passhat.tau2_bench.importer import import_tau2_bench

    result = import_tau2_bench(checkout, out, split=tasks)
    _say_imported(result.suites, result.cases, result.notes, f"τ²-bench {{env}}, {{cases}} case(s) from split {tasks!r}")


def _import_tau_bench(checkout: Path, out: Path, tasks: str) -> None:
    from passhat.tau_bench.importer import import_tau_bench

    result = import_tau_bench(checkout, out, split=tasks)
    _say_imported(result.suites, result.cases, result.notes, f"τ-bench {{env}}, {{cases}} case(s) from tasks_{tasks}.py")


def _say_imported(suites: dict[str, Path], cases: dict[str, int], notes: list[str], what: str) -> None:
    """One line per suite written (``what`` with ``{env}`` and ``{cases}``), then the importer's notes."""
    err = stderr_console()
    for env, folder in suites.items():
        err.print(escape(f"wrote {folder}: {what.format(env=env, cases=cases[env])}; "
                         f"check it with `passhat cases lint {folder / 'cases'}`"), highlight=False, soft_wrap=True)
    for note in notes:
        err.print(escape(f"note: {note}"), highlight=False, soft_wrap=True)
