"""What every command shares: the stderr console and the one way to stop on bad input (exit 2)."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from passhat.console import stderr_console
from passhat.errors import EXIT_BAD_INPUT, EXIT_OK, PasshatError

if TYPE_CHECKING:
    from rich.console import Console


@functools.cache
def stderr() -> Console:
    """The stderr console for messages and progress, made when something is first printed: rich's import (~5 % of
    the CPU ``passhat run`` spends before its first trial) waits until then, and a quiet run prints nothing
    before its trials."""
    return stderr_console()


def fail(message: str) -> NoReturn:
    """Stop with a user error: ``passhat.cli`` prints it on one unwrapped line and exits 2."""
    raise PasshatError(message)


class FiniteFloat(click.FloatRange):
    """A number option that must be finite (and in the range, if one is given). click's ``float`` and
    ``FloatRange`` take ``nan``, which passes every range check (it compares false both ways), and ``inf``:
    neither is a threshold, a confidence or a duration, and JSON, where the options are recorded, has neither.
    A bad value is a usage error naming the option (exit 2)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def suite_hint(message: str, ref: str) -> str:
    """Point at ``FOLDER/cases`` when FOLDER is a suite's root (domain.py, cases/) rather than its cases."""
    nested = Path(ref) / "cases"
    if "no case files" in message and nested.is_dir() and any(nested.glob("*.y*ml")):
        return f"{message}; the case files are in {nested}: pass that folder"
    return message


__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "FiniteFloat", "fail", "stderr", "suite_hint"]
