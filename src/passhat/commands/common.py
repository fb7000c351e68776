"""What every command shares: the stderr console and the one way to stop on bad input (exit 2)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

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


def suite_hint(message: str, ref: str) -> str:
    """Point at ``FOLDER/cases`` when FOLDER is a suite's root (domain.py, cases/) rather than its cases."""
    nested = Path(ref) / "cases"
    if "no case files" in message and nested.is_dir() and any(nested.glob("*.y*ml")):
        return f"{message}; the case files are in {nested}: pass that folder"
    return message


__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "fail", "stderr", "suite_hint"]
