"""``passhat shadow TRACES… --agent CANDIDATE --domain D`` and ``passhat shadow promote``.

``passhat shadow TRACES…`` is short for ``passhat shadow run TRACES…``. Exit codes of ``run``: 0 no
conversation diverges, 1 one does, 2 bad input (a malformed trace names file:line or the span, and the
field), 4 incomplete (more than --max-error-rate of the trials ended in infrastructure errors, and nothing
diverged in the rest). ``promote``: 0 written, 2 bad input. See docs/shadow.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from passhat.api import Progress as RunProgress
from passhat.commands.common import FiniteFloat, stderr
from passhat.commands.run_options import parse_redact_patterns
from passhat.models.shadow import ConversationResult, ShadowReport
from passhat.runner.health import DEFAULT_MAX_ERROR_RATE

LISTED = 40
"""Up to this many conversations, the table lists them all; beyond, only those that are not the same."""


class DefaultRun(click.Group):
    """A group whose ``run`` subcommand is implied: ``shadow TRACES…`` is ``shadow run TRACES…``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("shadow", cls=DefaultRun)
def shadow_group() -> None:
    """Replay production conversations with a candidate agent in the sandbox; report where its writes diverge.

    `passhat shadow TRACES… --agent CANDIDATE --domain D` is `passhat shadow run …`; `passhat shadow promote`
    turns one conversation into a regression case; `passhat shadow schema` prints the JSONL format's JSON Schema
    (docs/shadow.md).
    """


def _kinds_note(c: ConversationResult, replies_counted: bool = True) -> str:
    parts: list[str] = []
    measured = [t for t in c.trials if t.outcome != "error"]
    for kind in ("extra", "missing"):
        tools = sorted({w.tool for t in measured for w in getattr(t, kind)})
        if tools:
            parts.append(f"{kind} {', '.join(tools)}")
    diffs = {f"{d.tool}({', '.join(d.fields)})" for t in measured for d in t.different}
    if diffs:
        parts.append("different " + "; ".join(sorted(diffs)))
    dups = {f"{d.tool}×{d.times}" for t in measured for d in t.duplicates}
    if dups:
        parts.append("duplicate " + ", ".join(sorted(dups)))
    if c.production_duplicates:
        parts.append("production duplicate " + ", ".join(f"{d.tool}×{d.times}" for d in c.production_duplicates))
    replies = [t.reply for t in measured if t.reply is not None and (t.reply.missing or t.reply.extra)]
    if replies:
        r = replies[0]
        label = "reply" if replies_counted else "reply (not counted)"
        parts.append(f"{label} " + " ".join([*(f"−{n}" for n in r.missing), *(f"+{n}" for n in r.extra)]))
    unknown = sorted({name for t in measured for name in t.unknown_tools})
    if unknown:
        parts.append(f"called unknown tool {', '.join(unknown)}")
    problems = {f"{t.end_reason}: {t.problem}" for t in c.trials if t.problem}
    parts += sorted(problems)[:2]
    return "; ".join(parts)


def print_shadow(report: ShadowReport, console: Console) -> None:
    """The conversations (all, or those not the same when there are many), then the shares, then the verdict."""
    listed = report.conversations if len(report.conversations) <= LISTED else [
        c for c in report.conversations if c.status != "same"]
    console.print(escape(f"shadow · candidate {report.agent} · {len(report.conversations)} production conversation(s) "
                         f"of {report.domain} · {report.trials} trial(s) each"), highlight=False, soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=0, caption_justify="left", caption=(
        "diverged: trials that diverged / trials compared; same, extra, miss(ing), diff(erent): writes; dup: the "
        "candidate's repeated writes; prod dup: production's; reply: trials whose reply names other numbers; reads: "
        "answered from production's recording / by the sandbox"))
    table.add_column("conversation", overflow="fold", min_width=24)  # an 80-column log must not fold ids to 5 characters
    for column in ("diverged", "same", "extra", "miss", "diff", "dup", "prod dup", "reply", "reads"):
        table.add_column(column, justify="right", no_wrap=True)
    for c in listed:
        measured = [t for t in c.trials if t.outcome != "error"]
        style = "red" if c.status == "diverges" else "yellow" if c.status == "unmeasured" else None
        counts = [sum(t.same for t in measured), *(sum(len(getattr(t, k)) for t in measured)
                                                    for k in ("extra", "missing", "different")),
                  sum(d.times - 1 for t in measured for d in t.duplicates),
                  sum(d.times - 1 for d in c.production_duplicates), sum("reply" in t.kinds for t in measured)]
        table.add_row(escape(c.id), f"{c.diverging}/{c.measured}" if c.measured else "—", *map(str, counts),
                      f"{sum(t.reads_served for t in c.trials)}/{sum(t.reads_unrecorded for t in c.trials)}", style=style)
    console.print(table)
    for c in listed:  # what diverged (or could not be compared, or called unknown tools), one line each, never cut
        note = _kinds_note(c, report.replies_counted)
        if note and (c.status != "same" or any(t.unknown_tools for t in c.trials)):
            console.print(escape(f"  {c.id}: {note}"), highlight=False, soft_wrap=True)
    if len(listed) < len(report.conversations):
        console.print(f"{len(report.conversations) - len(listed)} conversation(s) the same as production, not listed "
                      f"(every one is in shadow.json)", highlight=False)
    shares = Table(title=f"conversations with each kind of divergence ({report.confidence:.0%} Wilson intervals)",
                   box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("kind", "conversations", "share", "interval", "occurrences"):
        shares.add_column(column, justify="left" if column == "kind" else "right")
    for s in report.shares:
        shares.add_row(s.kind, f"{s.conversations}/{s.of}", "—" if s.share is None else f"{s.share:.1%}",
                       f"[{s.ci_low:.1%}, {s.ci_high:.1%}]", str(s.count), style="bold" if s.kind == "any" else None)
    console.print(shares)
    any_ = report.shares[0]
    verdict = {0: "[green]no divergence[/]", 1: "[bold red]diverges[/]", 4: "[yellow]incomplete[/]"}[report.exit_code]
    unmeasured = f", {report.unmeasured} unmeasured (infrastructure errors)" if report.unmeasured else ""
    console.print(f"shadow {verdict} (exit {report.exit_code}): {any_.conversations} of {any_.of} measured "
                  f"conversation(s) diverge from production{unmeasured}", highlight=False, soft_wrap=True)


@shadow_group.command("run")
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--agent", "agent_spec", required=True,
              help="The candidate: careful, hasty, flaky, noop, openai:MODEL, anthropic:MODEL, module:function / "
                   "path.py:function, http://HOST:PORT/PATH, or cmd:\"COMMAND ARGS\".")
@click.option("--domain", required=True, help="The domain of the conversations: a built-in name, module:attr or a .py path.")
@click.option("--fixture", default="default", show_default=True,
              help="The sandbox: the domain fixture the candidate's writes go to (a conversation may name its own).")
@click.option("--trials", "-k", type=click.IntRange(1), default=1, show_default=True, help="Trials per conversation.")
@click.option("-j", "--concurrency", type=click.IntRange(1), default=4, show_default=True, help="Trials in flight at once.")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True, help="Run seed; trial seeds derive from it.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Shadow folder, new or empty (default: runs/shadow-DOMAIN-AGENT-TIMESTAMP).")
@click.option("--isolate", type=click.Choice(["none", "process"]), default="none", show_default=True,
              help="Run a Python candidate in a process of its own per trial.")
@click.option("--no-redact", is_flag=True, help="Keep e-mail, phone and card numbers (default: redacted as they are read).")
@click.option("--redact-field", multiple=True, help="Also redact every value under this key (repeatable).")
@click.option("--redact-pattern", multiple=True, metavar="NAME=REGEX", help="Also redact matches of REGEX (repeatable).")
@click.option("--max-error-rate", type=FiniteFloat(0, 1), default=DEFAULT_MAX_ERROR_RATE, show_default=True,
              help="Exit 4 (incomplete) when more than this share of trials ended in infrastructure errors.")
@click.option("--max-seconds", type=FiniteFloat(0, min_open=True), default=None,
              help="The candidate's time budget per conversation (default 60, as a case's); past it the trial ends "
                   "(time_limit) and is compared as it stands.")
@click.option("--confidence", type=FiniteFloat(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Level of the Wilson intervals.")
@click.option("--ignore-reply", is_flag=True,
              help="Compare the final replies but do not count a difference as a divergence (writes decide).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or tables: the verdict line only.")
@click.option("--base-url", default=None, help="Endpoint of an openai:/anthropic: candidate (OpenAI-compatible server).")
@click.option("--temperature", type=FiniteFloat(), default=None, help="Candidate sampling temperature.")
@click.option("--max-tokens", type=click.IntRange(1), default=None, help="Candidate output-token cap per model call.")
@click.option("--retries", type=click.IntRange(1), default=6, show_default=True,
              help="Attempts per model call on 429/5xx before the trial is an infrastructure error.")
def run_command(traces: tuple[Path, ...], agent_spec: str, domain: str, fixture: str, trials: int, concurrency: int,
                seed: int, out: Path | None, isolate: str, no_redact: bool, redact_field: tuple[str, ...],
                redact_pattern: tuple[str, ...], max_error_rate: float, max_seconds: float | None, confidence: float,
                ignore_reply: bool, quiet: bool, **model_kw: Any) -> None:
    """Replay every conversation of TRACES (JSONL or OTLP/JSON) with the candidate; report the divergence.

    Reads the candidate makes are answered from production's recording where they match; its writes run in
    the sandbox (--fixture). Exit 0 when no conversation diverges, 1 when one does, 2 bad input, 4 incomplete.
    """
    from passhat.shadow import shadow

    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=stderr(), disable=quiet or not stderr().is_terminal)
    with progress:
        bar: list[TaskID] = []

        def advance(p: RunProgress) -> None:
            if not bar:
                bar.append(progress.add_task(f"shadow · {agent_spec}", total=p.total, completed=p.done))
            else:
                progress.update(bar[0], completed=p.done)

        result = shadow(traces, agent_spec, domain=domain, fixture=fixture, trials=trials, concurrency=concurrency,
                        seed=seed, out=out, redact=not no_redact, redact_fields=redact_field,
                        redact_patterns=parse_redact_patterns(redact_pattern), isolate=isolate,  # type: ignore[arg-type]
                        max_error_rate=max_error_rate, max_seconds=max_seconds, confidence=confidence,
                        replies=not ignore_reply, progress=advance,
                        on_warning=lambda w: stderr().print(f"[yellow]warning:[/yellow] {escape(w)}", highlight=False),
                        **model_kw)
    report = result.report
    if quiet:
        any_ = report.shares[0]
        stderr().print(f"shadow · {report.agent}: {any_.conversations} of {any_.of} conversation(s) diverge "
                  f"(exit {report.exit_code})", highlight=False)
    else:
        print_shadow(report, Console())
    if result.incomplete is not None:
        stderr().print(f"[yellow]incomplete:[/yellow] {escape(result.incomplete)}", highlight=False)
    stderr().print(escape(f"shadow folder: {result.folder} (shadow.json; the candidate's run in {result.folder / 'run'})"),
              highlight=False)
    sys.exit(report.exit_code)


@shadow_group.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of one line of a JSONL trace file (a conversation)."""
    import json

    from passhat.shadow.traces import Conversation

    click.echo(json.dumps(Conversation.model_json_schema(), indent=2))


@shadow_group.command("promote")
@click.argument("shadow_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("conversation_id")
@click.option("--to", "to", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="The suite's case folder to write CONVERSATION_ID.yaml into.")
@click.option("--expect", type=click.Choice(["production", "candidate"]), default="production", show_default=True,
              help="Whose writes give the expected final state.")
@click.option("--trial", type=click.IntRange(0), default=None,
              help="With --expect candidate: which trial's writes (default: the first compared one).")
def promote_command(shadow_dir: Path, conversation_id: str, to: Path, expect: str, trial: int | None) -> None:
    """Write CONVERSATION_ID of SHADOW_DIR as a regression case in TO: recorded user, expected final state."""
    from passhat.shadow import promote

    file = promote(shadow_dir, conversation_id, to, expect=expect, trial=trial)  # type: ignore[arg-type]
    stderr().print(escape(f"wrote {file} (split regression, expects {expect}'s writes); run it with "
                     f"`passhat run {to} --agent …`, check it with `passhat cases lint {to}`"), highlight=False)
