"""Code workspaces: a fixture folder or git commit, a private copy per trial, its file diff, and
commands run inside it under a sandbox.

A low layer: it imports nothing from passhat but :mod:`passhat.errors`.

- :mod:`~passhat.workspace.paths` — agent-supplied paths confined to the copy.
- :mod:`~passhat.workspace.tree` — :class:`WorkspaceImage`, :class:`WorkspaceCopy`, :class:`FileDiff`,
  :func:`apply_file_diff` (the last three defined in ``copies``, ``diff`` and ``apply``).
- :mod:`~passhat.workspace.sandbox` — :func:`run_command` and the :func:`isolation` it gets.
"""

from passhat.workspace.bounds import WorkspaceBounds
from passhat.workspace.diff import FileChange, FileDiff
from passhat.workspace.errors import WorkspaceError
from passhat.workspace.paths import WorkspacePathError, inside
from passhat.workspace.sandbox import CommandResult, Isolation, isolation, run_command
from passhat.workspace.tree import (
    DEFAULT_IGNORE,
    FileEntry,
    WorkspaceCopy,
    WorkspaceImage,
    apply_file_diff,
)

__all__ = [
    "DEFAULT_IGNORE",
    "CommandResult",
    "FileChange",
    "FileDiff",
    "FileEntry",
    "Isolation",
    "WorkspaceBounds",
    "WorkspaceCopy",
    "WorkspaceError",
    "WorkspaceImage",
    "WorkspacePathError",
    "apply_file_diff",
    "inside",
    "isolation",
    "run_command",
]
