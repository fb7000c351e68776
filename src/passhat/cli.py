"""The ``passhat`` command line: the command tree, loaded lazily, and the one way errors leave it.

Exit codes, the same for every command (docs/cli.md lists which command can return which):

    0    success: the command did its job (a run that completed, whatever the agent scored; gate PASS)
    1    a negative verdict: gate FAIL, lint findings, a suite that differs from its snapshot,
         a calibration minimum missed, a shadow run that diverges from production
    2    bad input: a malformed case, gate or domain file, an unknown agent, an unusable run folder,
         a file that cannot be written, a wrong option — one line naming the file and the field
    3    gate INCONCLUSIVE: not enough evidence either way
    4    incomplete run: more than --max-error-rate of its trials ended in infrastructure errors, or an
         in-process agent blocked the event loop for good (the run aborted; under Ray, workers replaced)
    70   a passhat bug (an unexpected exception): one line; --debug or PASSHAT_DEBUG=1 shows the traceback
    130  interrupted (Ctrl-C, or SIGTERM); a run folder continues with --resume

Commands live in ``passhat.commands`` and are imported only when used, so ``passhat --help`` and
``passhat --version`` do not import scipy, numpy, pydantic models or model SDKs: the table below holds
each command's module and its one-line help (``tests/cli`` checks them against the commands).
"""

from __future__ import annotations

import errno
import gc
import importlib
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import click

from passhat import __version__
from passhat.errors import EXIT_BAD_INPUT, EXIT_BUG, EXIT_INTERRUPTED, PasshatError, describe_os_error

EXIT_CODES_HELP = ("Exit codes: 0 success; 1 gate or canary FAIL, shadow divergence, lint findings, suite differs from "
                   "its snapshot, calibration below a minimum; 2 bad input; 3 gate or canary INCONCLUSIVE; 4 incomplete run "
                   "(too many infrastructure errors, or an agent blocked the event loop for good); 70 a passhat bug "
                   "(--debug shows the traceback); 130 interrupted.")

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("passhat.commands.run:run",
            "Run every case of SUITE (a built-in name or a folder) TRIALS times with AGENT."),
    "show": ("passhat.commands.show:show",
             "Print the summary of RUN_FOLDER: its summary.json when that counts every record in trials.jsonl, "
             "otherwise recomputed from trials.jsonl."),
    "compare": ("passhat.commands.compare:compare",
                "Compare CANDIDATE with BASE (two run folders of the same suite), case by case."),
    "gate": ("passhat.commands.gate:gate",
             "Evaluate the release gate of RUN_FOLDER: exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 bad input."),
    "canary": ("passhat.commands.canary:canary",
               "Compare CANDIDATE's production outcomes with BASELINE's: exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE, "
               "2 bad input."),
    "shadow": ("passhat.commands.shadow:shadow_group",
               "Replay production conversations with a candidate agent in the sandbox; report where its writes "
               "diverge."),
    "report": ("passhat.commands.report:report",
               "Write RUN_FOLDER/report.html: curves, strata, cases, and every trajectory (loaded on demand)."),
    "view": ("passhat.commands.view:view",
             "Serve FOLDER (default: runs) locally: an index of its runs, each linking to its report."),
    "export-otlp": ("passhat.commands.export:export_otlp",
                    "Export every trial of RUN_FOLDER as an OpenTelemetry trace (GenAI semantic conventions)."),
    "calibrate": ("passhat.commands.calibrate:calibrate",
                  "Agreement of the judge with human labels: p_o, Cohen's κ, Gwet's AC1, prevalence, sensitivity "
                  "and specificity (Wilson CIs), swap and test-retest consistency, and the Rogan–Gladen corrected "
                  "pass rate."),
    "judge": ("passhat.commands.judge:judge_command",
              "Judge the recorded trials of RUN_FOLDER whose cases have a judge: section; write judgments JSONL."),
    "pairwise": ("passhat.commands.judge:pairwise_command",
                 "Compare the replies of RUN_A and RUN_B trial by trial, each pair judged in both orders (a verdict "
                 "that flips with the order is a tie); agent and model names are masked."),
    "regrade": ("passhat.commands.regrade:regrade_command",
                "Re-grade RUN_FOLDER's stored trajectories and final states without re-running the agent."),
    "init": ("passhat.commands.init:init_command",
             "Create a starter suite in FOLDER: domain.py, schema, fixture, policy, three cases and an agent."),
    "suite": ("passhat.commands.suite:suite_group", "Suite versions: content hashes, frozen snapshots, what changed."),
}
"""Command name → ("module:attribute", the command's help up to its first blank line, on one line)."""

CASES_COMMANDS: dict[str, tuple[str, str]] = {
    "lint": ("passhat.commands.cases:lint_command",
             "Check SUITE (a built-in name or a folder): schema, references, ids, leaks, grading, coverage."),
    "import": ("passhat.commands.cases:import_command",
               "Turn SOURCE into cases: real requests (JSONL) into skeletons, or a τ-bench checkout into "
               "suites."),
    "expected": ("passhat.commands.expected:expected_command",
                 "Print the expected final state CASE_ID's `reference:` calls produce: their row changes, table by table."),
    "from-failure": ("passhat.commands.from_failure:from_failure",
                     "Turn failed TRIAL of CASE_ID in RUN_FOLDER into a regression case file."),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when one is run (or asked for its own help).

    ``lazy`` maps a command name to ("module:attribute", short help); the group's help lists them from
    the table, as click would from the commands, without importing them.
    """

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, _, attr = self.lazy[cmd_name][0].partition(":")
            with _imports_frozen():
                command = getattr(importlib.import_module(module), attr)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = [n for n in self.list_commands(ctx) if n in self.lazy or not self.commands[n].hidden]
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in self.commands:
                rows.append((name, self.commands[name].get_short_help_str(limit)))
            else:
                # an unloaded command's help line, shortened as click shortens a loaded one's
                rows.append((name, click.Command(name, help=self.lazy[name][1]).get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@contextmanager
def _imports_frozen() -> Iterator[None]:
    """A command's modules are imported with Python's collector off, and everything the process holds then is
    frozen out of its passes for good (``gc.freeze``).

    Importing ``passhat run``'s modules makes ~45,000 container objects (classes, functions, pydantic's
    schemas) that live as long as the process. With the collector on, each time they grew by a quarter it walked
    all of them again; after, every full pass (numpy's import and the report's at the end, the one at exit)
    walked them once more: 5 % of a short run's instructions, 3 % of those before its first trial
    (docs/design/041). Nothing changes for a program that turned collection off or froze objects itself, and
    this happens once per process: a program that runs commands in-process (a test runner) has what it held at
    the first command frozen, garbage cycles among it then included, which is bounded."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.freeze()


class PasshatGroup(LazyGroup):
    """The root of the command tree, and the one place errors become output and exit codes.

    A :class:`~passhat.errors.PasshatError` (a bad case, gate, domain or agent spec, run folder), or a file
    that cannot be read or written, is printed once by :func:`passhat.console.print_error` and exits 2.
    Any other exception is a passhat bug: one line, exit 70. ``--debug`` prints the traceback first.
    """

    def invoke(self, ctx: click.Context) -> Any:
        from passhat import shutdown

        restore = shutdown.install()  # Ctrl-C and SIGTERM stop any command within seconds (passhat.shutdown)
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # usage errors (exit 2) and explicit exits: click reports them
        except PasshatError as exc:
            _stop(ctx, exc, EXIT_BAD_INPUT, str(exc))
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # output piped into `head`: click handles it
                raise
            _stop(ctx, exc, EXIT_BAD_INPUT, describe_os_error(exc))
        except KeyboardInterrupt as exc:
            _stop(ctx, exc, EXIT_INTERRUPTED, None)
        except Exception as exc:
            _stop(ctx, exc, EXIT_BUG, None)
        except BaseException as exc:  # a cancellation that a stop request caused: interrupted, not a bug
            if shutdown.stop_requested():
                _stop(ctx, exc, EXIT_INTERRUPTED, None)
            raise
        finally:
            restore()


def _stop(ctx: click.Context, exc: BaseException, code: int, message: str | None) -> NoReturn:
    from passhat.console import print_bug, print_error

    if ctx.params.get("debug"):
        traceback.print_exception(exc, file=sys.stderr)
    if code == EXIT_INTERRUPTED:
        click.echo("interrupted", err=True)
    elif message is None:
        print_bug(exc)
    else:
        print_error(message)
    sys.exit(code)


@click.group(cls=PasshatGroup, lazy=COMMANDS, epilog=EXIT_CODES_HELP)
@click.option("--debug", is_flag=True, envvar="PASSHAT_DEBUG",
              help="Print the traceback of an error (also PASSHAT_DEBUG=1).")
@click.version_option(__version__, prog_name="passhat")
def main(debug: bool) -> None:
    """passhat — evaluate tool-using agents: sandboxed worlds, final-state grading, pass^k."""
    import os

    # `--agent my_module:fn` and `domain: my_pkg.domain:domain` find modules in the current folder, as
    # under `python -m passhat` (appended, so nothing installed is shadowed)
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())


@main.group(cls=LazyGroup, lazy=CASES_COMMANDS)
def cases() -> None:
    """Work with case files."""


@cases.command("reference")
def cases_reference() -> None:
    """Print the case-file reference (Markdown), generated from the models."""
    from passhat.cases.reference import case_file_reference

    click.echo(case_file_reference(), nl=False)


@cases.command("schema")
def cases_schema() -> None:
    """Print the JSON Schema of a case file (for editors and validators)."""
    import json

    from passhat.cases import Case

    click.echo(json.dumps(Case.model_json_schema(), indent=2))


@main.group()
def agents() -> None:
    """The protocol for agents that run elsewhere (services, programs, isolated processes)."""


@agents.command("protocol")
def agents_protocol() -> None:
    """Print the agent protocol reference (Markdown), generated from the models."""
    from passhat.serve.protocol import protocol_reference

    click.echo(protocol_reference(), nl=False)


@agents.command("schema")
def agents_schema() -> None:
    """Print the JSON Schemas of the start message, the reply and a usage report."""
    import json

    from passhat.serve.protocol import protocol_schemas

    click.echo(json.dumps(protocol_schemas(), indent=2))
