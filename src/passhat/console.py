"""Terminal output for the command line.

Messages to stderr are never hard-wrapped: a path, a field name or a case id must stay on one line so
it can be grepped and copied, whatever the terminal width (rich wraps at 80 columns when it cannot
tell the width, e.g. under CI or a test runner).
"""

from __future__ import annotations

from rich.console import Console


def stderr_console() -> Console:
    """A console for messages and progress on stderr that leaves long lines whole."""
    return Console(stderr=True, soft_wrap=True)


__all__ = ["stderr_console"]
