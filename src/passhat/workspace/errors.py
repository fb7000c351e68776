"""The one error family of the workspace layer."""

from __future__ import annotations

from passhat.errors import PasshatError


class WorkspaceError(PasshatError):
    """A workspace fixture, copy, recorded diff or command cannot be used as asked.

    The message names the folder, repository, commit or path concerned and says what would be valid.
    """
