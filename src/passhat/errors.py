"""Errors a user can act on, and the exit codes of the command line.

Every user-facing error names where the problem is (file, field) and what would be valid, so a
person can fix it without reading our source. The command line prints a :class:`PasshatError` once, on
one line, and exits ``EXIT_BAD_INPUT``; any other exception is a passhat bug (``EXIT_BUG``).
"""

from __future__ import annotations

EXIT_OK = 0
"""The command did its job (a run that completed, whatever the agent scored; a gate PASS)."""
EXIT_FAILED = 1
"""A negative verdict: gate FAIL, lint findings, a suite that differs from its snapshot, a calibration
minimum missed."""
EXIT_BAD_INPUT = 2
"""A user error: a malformed case, gate or domain file, an unknown agent, an unusable run folder, a file
that cannot be written, a wrong option."""
EXIT_INCONCLUSIVE = 3
"""A gate INCONCLUSIVE: not enough evidence either way."""
EXIT_INCOMPLETE = 4
"""A run that did not measure the agent: too many trials ended in infrastructure errors, or the run was
aborted before every trial ran (an in-process agent blocked the event loop: passhat/runner/watchdog.py), or
under Ray or the processes executor had its workers killed and replaced for that reason (the manifest's ``replaced_workers``)."""
EXIT_BUG = 70
"""An unexpected exception: a passhat bug (``EX_SOFTWARE`` in sysexits.h)."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C, 128 + SIGINT); a run folder left this way continues with ``--resume``."""


class PasshatError(Exception):
    """An error in what the user gave passhat (a file, an option, a folder), not a bug in passhat: the one
    class of user errors (``passhat.PasshatError``; it was also called ``UserError`` until both names were
    made one).

    Its message is the whole report: it names the file and the field, and says what would be valid.
    """


def describe_os_error(exc: OSError) -> str:
    """``FILE: reason`` for a file that cannot be read or written (not ``[Errno 13] …``)."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


class CaseError(PasshatError):
    """A case file or suite is malformed. Raised before any trial runs."""

    def __init__(self, file: str, field: str, message: str) -> None:
        self.file = file
        self.field = field
        self.message = message
        where = f"{file}: {field}" if field else file
        super().__init__(f"{where}: {message}")


class DomainError(PasshatError):
    """A domain (schema, fixtures, tools) is malformed."""


class RunError(PasshatError):
    """A run folder cannot be created, resumed or read."""


class InfrastructureError(PasshatError):
    """Something outside the agent under test failed and kept failing: a model provider's rate limit or
    5xx errors after bounded retries, an unreachable server, rejected credentials.

    Raised from inside an agent (or a user simulator or judge), it is *not* the agent's failure: the
    runner records the trial as outcome ``error`` (neither pass nor fail) and retries it once.
    """


class AgentCrashed(Exception):
    """The agent under test failed in a way passhat saw from outside: a command that exited non-zero or
    printed something that is not a reply, a service that answered 500 or not JSON, a connection it
    dropped mid-answer. It is the agent's failure (outcome ``fail``, end reason ``agent_error``) with this
    message as the evidence — unlike :class:`InfrastructureError`, which is never the agent's."""
