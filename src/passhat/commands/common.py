"""What every command shares: the stderr console and the one way to stop on bad input (exit 2)."""

from __future__ import annotations

from typing import NoReturn

from passhat.console import stderr_console
from passhat.errors import EXIT_BAD_INPUT, EXIT_OK, PasshatError

err = stderr_console()


def fail(message: str) -> NoReturn:
    """Stop with a user error: ``passhat.cli`` prints it on one unwrapped line and exits 2."""
    raise PasshatError(message)


__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "err", "fail"]
