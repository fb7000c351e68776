"""What every command shares: the stderr console and the one way to stop on bad input (exit 2)."""

from __future__ import annotations

import sys
from typing import NoReturn

from rich.markup import escape

from passhat.console import stderr_console

EXIT_OK, EXIT_BAD_INPUT = 0, 2
err = stderr_console()


def fail(message: str) -> NoReturn:
    """Print a user error on one unwrapped line and exit 2."""
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    sys.exit(EXIT_BAD_INPUT)
