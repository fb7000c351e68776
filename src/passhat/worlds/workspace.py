"""The ``workspace`` world kind: a folder captured once per run, a private copy per trial, its file diff.

A thin face over :mod:`passhat.workspace` (docs/design/018) for the world seam (docs/design/019): the
image is a :class:`WorkspaceImage`, a copy a :class:`WorkspaceCopy`. The diff also strips the copy of
what a tree leaves out (caches, ``.pyc``, ``.git``, modes), because what is graded is the tree the diff
describes. A failed tool call's file writes are not undone (a folder has no transactions), as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from passhat.workspace.tree import FileDiff, WorkspaceCopy, WorkspaceImage, apply_file_diff
from passhat.world.kind import NO_SCOPE, Facet, NoScope


class WorkspacePart:
    """One trial's private copy of a workspace, as a world part (``{workspace}`` is its folder)."""

    kind = "workspace"
    facet: Facet = "files"
    blocking = True

    def __init__(self, copy: WorkspaceCopy) -> None:
        self.copy = copy
        self.handle: object = copy

    def reach(self) -> dict[str, str]:
        return {"workspace": str(self.copy.root)}

    def call_scope(self) -> NoScope:
        return NO_SCOPE

    def diff(self) -> FileDiff:
        files = self.copy.diff()
        self.copy.strip()  # graded: the recorded tree, not the caches or .pyc files the diff leaves out
        return files

    def reader(self) -> None:
        return None

    def discard(self) -> None:
        self.copy.discard()


class WorkspaceWorld:
    """A workspace fixture's image: copies are made by ``make_copy`` (the domain decides where they go)."""

    kind = "workspace"
    facet: Facet = "files"
    blocking = True
    start: datetime | None = None

    def __init__(self, tree: WorkspaceImage, make_copy: Callable[[], WorkspaceCopy | None]) -> None:
        self.tree = tree
        self._make_copy = make_copy

    def content_hash(self) -> str:
        return self.tree.digest

    def open(self) -> WorkspacePart:
        copy = self._make_copy()
        if copy is None:  # the domain no longer has this workspace (cannot happen for an image it built)
            raise RuntimeError("the workspace image has no copy to give")
        return WorkspacePart(copy)

    def rebuild(self, diff: FileDiff) -> WorkspacePart:
        copy = self.tree.restore()
        try:
            apply_file_diff(copy, diff)
        except BaseException:
            copy.discard()
            raise
        return WorkspacePart(copy)

    @contextmanager
    def reading(self) -> Iterator[None]:
        yield None

    def close(self) -> None:
        self.tree.close()
