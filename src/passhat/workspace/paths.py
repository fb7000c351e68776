"""Paths an agent names, confined to its workspace copy.

An agent (through a tool) names files by relative paths. Its own commands may have planted symbolic
links in the copy (``ln -s /etc link``), so a path is checked after the operating system would follow
its links, not only by its spelling.

A check and the use that follows are two steps. Under the ``unshare`` sandbox no process of the agent
outlives its command (the command's PID namespace dies with it), so nothing can swap a folder for a
link in between while a tool runs; under the ``none`` fallback a background process could.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from passhat.workspace.errors import WorkspaceError


class WorkspacePathError(WorkspaceError):
    """A path that is not inside the workspace (or is not a usable relative path at all)."""


MAX_LINKS = 40
"""Symbolic links followed in one path before giving up (Linux's own limit)."""


def inside(root: Path, relpath: str, *, follow_symlinks: bool = True) -> Path:
    """The absolute path inside ``root`` that ``relpath`` names, or :class:`WorkspacePathError`.

    ``relpath`` is relative to the workspace root: ``"src/a.py"``, ``"./x"``, ``"a/../b"``; ``"."``
    is the root itself; the path need not exist. The empty string is refused (say ``"."``), as are
    absolute paths, NUL bytes, and any path that, resolved as the operating system would (``..``
    after a link goes up from the link's target), leaves ``root`` at any step: by ``..`` at the root,
    or through a symbolic link whose target is outside, even if a later ``..`` would come back in.

    With ``follow_symlinks=False`` a link in the last component is not followed (the parents still
    are), so a caller can remove or replace the link itself, wherever it points.
    """
    if not isinstance(relpath, str):
        raise WorkspacePathError(f"path {relpath!r} is not a string")
    if "\x00" in relpath:
        raise WorkspacePathError(f"path {relpath!r} contains a NUL byte")
    if relpath == "":
        raise WorkspacePathError("path '' is empty; use '.' for the workspace root")
    if relpath.startswith("/"):
        raise WorkspacePathError(f"path {relpath!r} is outside the workspace: give a path relative to the workspace root")
    base = os.path.realpath(root)
    current = base
    pending = list(reversed(relpath.split("/")))  # a stack: a link's target is pushed on top
    links = 0
    via = ""  # the last link followed, named in the error: the agent may not know it made one
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if current == base:
                raise WorkspacePathError(f"path {relpath!r} is outside the workspace{via}")
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, part)
        if (pending or follow_symlinks) and os.path.islink(step):
            links += 1
            if links > MAX_LINKS:
                raise WorkspacePathError(f"path {relpath!r} goes through more than {MAX_LINKS} symbolic links")
            target = os.readlink(step)
            via = f": symbolic link {posixpath.relpath(step, base)!r} leads to {target!r}"
            if os.path.isabs(target):
                if not target.startswith(base + os.sep):
                    raise WorkspacePathError(f"path {relpath!r} is outside the workspace{via}")
                current, target = base, target[len(base) + 1:]
            pending.extend(reversed(target.split("/")))
            continue
        current = step
    return Path(current)
