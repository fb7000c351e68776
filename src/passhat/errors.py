"""Errors a user can act on.

Every user-facing error names where the problem is (file, field) and what would be valid, so a
person can fix it without reading our source.
"""

from __future__ import annotations


class PasshatError(Exception):
    """Base class for errors passhat reports to the user (bad input, not bugs)."""


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
