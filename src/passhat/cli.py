"""The ``passhat`` command line.

Exit codes: 0 success (a run that completed, whatever the agent scored); 1 a gate FAIL, lint findings,
a suite that differs from its snapshot or a calibration threshold missed; 2 bad input (a malformed
case, an unknown agent, an unusable run folder, a file that cannot be written); 3 a gate INCONCLUSIVE;
4 an incomplete run (more than --max-error-rate of its trials ended in infrastructure errors).
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

import click

from passhat.commands.calibrate import calibrate
from passhat.commands.cases import import_command, lint_command
from passhat.commands.common import fail
from passhat.commands.compare import compare
from passhat.commands.export import export_otlp
from passhat.commands.from_failure import from_failure
from passhat.commands.gate import gate
from passhat.commands.init import init_command
from passhat.commands.judge import judge_command, pairwise_command
from passhat.commands.regrade import regrade_command
from passhat.commands.report import report
from passhat.commands.run import run
from passhat.commands.show import show
from passhat.commands.suite import suite_group
from passhat.commands.view import view
from passhat.errors import PasshatError


class PasshatGroup(click.Group):
    """The command tree, with one last line of defence: a file that cannot be read or written (an
    ``--out`` in a missing or read-only place) or a user error a command forgot to catch is reported
    in one line naming the file, exit 2 — never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PasshatError as exc:
            fail(str(exc))
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # output piped into `head`: click handles it
                raise
            where = f"{exc.filename}: " if exc.filename else ""
            fail(f"{where}{exc.strerror or exc}")


@click.group(cls=PasshatGroup, epilog="Exit codes: 0 success; 1 gate FAIL, lint findings, suite differs from its snapshot, "
             "calibration below a minimum; 2 bad input; 3 gate INCONCLUSIVE; 4 incomplete run (too many "
             "infrastructure errors).")
@click.version_option(package_name="passhat")
def main() -> None:
    """passhat — evaluate tool-using agents: sandboxed worlds, final-state grading, pass^k."""
    # `--agent my_module:fn` and `domain: my_pkg.domain:domain` find modules in the current folder, as
    # under `python -m passhat` (appended, so nothing installed is shadowed)
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())


@main.group()
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


main.add_command(run)
main.add_command(show)
main.add_command(calibrate)
main.add_command(judge_command)
main.add_command(pairwise_command)
main.add_command(compare)
main.add_command(gate)
main.add_command(report)
main.add_command(view)
main.add_command(export_otlp)

cases.add_command(from_failure)
cases.add_command(lint_command)
cases.add_command(import_command)
main.add_command(suite_group)
main.add_command(regrade_command)
main.add_command(init_command)
