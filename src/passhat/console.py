"""Terminal output for the command line, and the one way an error reaches the terminal.

Messages to stderr are never hard-wrapped: a path, a field name or a case id must stay on one line so
it can be grepped and copied, whatever the terminal width (rich wraps at 80 columns when it cannot
tell the width, e.g. under CI or a test runner). Text that comes from the user (a path, a case id, a
message quoting a file) is printed as text, never read as rich markup: ``x[/y]`` is a fine folder name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported when something is printed, not by `passhat --help`
    from rich.console import Console


def stderr_console() -> Console:
    """A console for messages and progress on stderr that leaves long lines whole."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)


def print_error(message: str) -> None:
    """``error: MESSAGE`` on stderr, on one line as given (long lines unwrapped, markup not interpreted).

    Every user error of every command is printed by this function, once (see ``passhat.cli``)."""
    _print_labelled("error:", "red", message)


def print_bug(exc: BaseException) -> None:
    """The one line for an exception passhat did not expect: it is a bug, and how to show its traceback."""
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    _print_labelled("passhat bug:", "bold red", f"{what} — please report it with the traceback "
                    "(run again with --debug, or PASSHAT_DEBUG=1, to see it)")


def _print_labelled(label: str, style: str, message: str) -> None:
    from rich.text import Text

    stderr_console().print(Text.assemble((label, style), " ", message), highlight=False)


__all__ = ["print_bug", "print_error", "stderr_console"]
