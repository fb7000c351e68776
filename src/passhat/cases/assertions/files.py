"""Files of the final workspace: which changed, which exist, what they hold.

They read the trial's file diff (added / removed / modified against the fixture, caches left out) and
the final tree. A check asked of a trial without a workspace fails closed; a case whose fixture has none
is refused when the suite loads.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from passhat.cases.assertions.base import BuiltinAssertion, GradedSubject
from passhat.cases.globs import check_globs, matches
from passhat.workspace.paths import WorkspacePathError, inside
from passhat.workspace.tree import DEFAULT_IGNORE

if TYPE_CHECKING:
    from passhat.graders.base import TrialView

SHOWN = 5
"""Paths named in a reason before "and N more"."""
MAX_MATCHED_FILE = 32 * 1024 * 1024
"""Largest file ``file_matches`` reads (a larger one fails the check, saying so)."""


def final_tree(view: TrialView) -> Path:
    """The root of the trial's final tree; ``ValueError`` (the grade fails closed) when it has none."""
    if view.workspace is None or view.files is None:
        raise ValueError("this trial has no workspace (the case's domain declares none)")
    return view.workspace


def _final(view: TrialView, path: str, *, follow_symlinks: bool = True) -> Path:
    try:
        return inside(final_tree(view), path, follow_symlinks=follow_symlinks)
    except WorkspacePathError as exc:
        raise ValueError(str(exc)) from None


def _listed(paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


class FileUnchanged(BuiltinAssertion):
    """Files matching ``paths`` are exactly as in the fixture: none modified, removed, or added under them.

    A glob's ``*`` stays within one path segment, ``**`` spans any number of them, ``?`` is one
    character; a pattern also covers everything under a directory it matches (``tests`` is ``tests/**``).
    Paths are relative to the workspace root with ``/``.
    """

    subject: ClassVar[GradedSubject] = "state"
    shorthand: ClassVar[str | None] = "paths"
    needs_workspace: ClassVar[bool] = True
    bounds_scope: ClassVar[bool] = True

    kind: Literal["file_unchanged"] = "file_unchanged"
    paths: list[str] = Field(min_length=1)
    """Globs of the protected files, e.g. ``[tests, LICENSE, "src/pkg/_generated*.py"]``."""

    @model_validator(mode="before")
    @classmethod
    def _one_path(cls, data: Any) -> Any:
        if isinstance(data, dict) and "path" in data and "paths" not in data:
            data = {**data, "paths": data["path"]}
            del data["path"]
        return data

    @field_validator("paths", mode="before")
    @classmethod
    def _path_globs(cls, value: Any) -> Any:
        return check_globs(value)

    def check(self, view: TrialView) -> tuple[bool, str]:
        final_tree(view)
        touched = [f"{c.path} ({c.kind})" for c in view.files.changes if matches(c.path, self.paths)]  # type: ignore[union-attr]
        if touched:
            return False, f"{len(touched)} protected file(s) changed: {_listed(touched)}"
        return True, f"no file under {', '.join(self.paths)} changed"


class FileExists(BuiltinAssertion):
    """The file ``path`` exists in the final workspace."""

    subject: ClassVar[GradedSubject] = "state"
    shorthand: ClassVar[str | None] = "path"
    needs_workspace: ClassVar[bool] = True

    kind: Literal["file_exists"] = "file_exists"
    path: str = Field(min_length=1)
    """The file's path relative to the workspace root."""

    def check(self, view: TrialView) -> tuple[bool, str]:
        target = _final(view, self.path)
        if target.is_file():
            return True, f"{self.path} exists"
        return False, f"{self.path}: expected a file, " + ("found a directory" if target.is_dir() else "nothing is there")


class FileAbsent(BuiltinAssertion):
    """Nothing exists at ``path`` in the final workspace: no file or link there, and no file under it (a
    directory holding no file is absent: directories are not part of a tree, as in the file diff)."""

    subject: ClassVar[GradedSubject] = "state"
    shorthand: ClassVar[str | None] = "path"
    needs_workspace: ClassVar[bool] = True

    kind: Literal["file_absent"] = "file_absent"
    path: str = Field(min_length=1)
    """The path relative to the workspace root."""

    def check(self, view: TrialView) -> tuple[bool, str]:
        """No file at ``path`` nor under it. A folder holding no file is absent: folders are not part of a tree
        (the file diff never shows one, and a re-grade cannot rebuild one), so the verdict must not see it."""
        root = final_tree(view)
        target = _final(view, self.path, follow_symlinks=False)  # a link is something there, wherever it points
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            kind = "symbolic link" if target.is_symlink() else "file" if target.is_file() else "FIFO, socket or device"
            return False, f"{self.path}: expected nothing there, found a {kind}"
        inner = _first_file(target) if target.is_dir() else None
        if inner is not None:
            return False, (f"{self.path}: expected nothing there, found a directory holding "
                           f"{Path(inner).relative_to(root).as_posix()}")
        return True, f"{self.path} is absent" + (" (an empty directory is not part of the tree)" if target.is_dir() else "")


def _first_file(folder: Path) -> str | None:
    """The first file, link or special file under ``folder`` (caches and ``.git`` left out, as in the diff)."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name == ".git" or any(fnmatch.fnmatchcase(entry.name, p) for p in DEFAULT_IGNORE):
            continue
        if not entry.is_dir(follow_symlinks=False):
            return entry.path
        inner = _first_file(Path(entry.path))
        if inner is not None:
            return inner
    return None


class FileMatches(BuiltinAssertion):
    """The text file ``path`` exists and the regular expression ``pattern`` is found in it."""

    subject: ClassVar[GradedSubject] = "state"
    needs_workspace: ClassVar[bool] = True

    kind: Literal["file_matches"] = "file_matches"
    path: str = Field(min_length=1)
    """The file's path relative to the workspace root."""
    pattern: str
    """Python regular expression searched in the file (``(?m)`` for line anchors)."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"pattern {value!r} is not a regular expression: {exc}") from None
        return value

    def label_target(self) -> str:
        return self.pattern

    def check(self, view: TrialView) -> tuple[bool, str]:
        target = _final(view, self.path)
        if not target.is_file():
            return False, f"{self.path}: no such file, so /{self.pattern}/ cannot be found in it"
        size = target.stat().st_size
        if size > MAX_MATCHED_FILE:  # the agent decides how large; the harness grading every trial must not run out of memory
            return False, f"{self.path}: {size:,} bytes, over the {MAX_MATCHED_FILE:,} bytes file_matches reads"
        text = target.read_bytes().decode("utf-8", "replace")
        if re.search(self.pattern, text):
            return True, f"/{self.pattern}/ found in {self.path}"
        return False, f"/{self.pattern}/ not found in {self.path}"


KINDS: tuple[type[BuiltinAssertion], ...] = (FileUnchanged, FileExists, FileAbsent, FileMatches)
"""This family's kinds, in the order the reference documents them."""
