"""What a trial changed in its workspace, file by file, in a form that can be stored and re-applied.

A :class:`FileDiff` is what a run records: per changed file the content hashes before and after, a
bounded unified diff for people and judges, and — within a budget — the new full text, so that a
regrade can rebuild the final tree (:func:`passhat.workspace.tree.apply_file_diff`) without the
copy, which is gone by then.
"""

from __future__ import annotations

import codecs
import difflib
from collections import Counter
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, get_args

from passhat.workspace.errors import WorkspaceError

ChangeKind = Literal["added", "removed", "modified"]

MAX_TEXT_DIFF = 64 * 1024
"""UTF-8 bytes of unified diff kept per file; the rest is cut at a line end and marked."""
MAX_TEXT_DIFFS = 4 * 1024 * 1024
"""UTF-8 bytes of unified diffs kept per diff in total, files taken in path order; later files get a
one-line note. Without it, an agent that writes thousands of files makes a record of gigabytes."""
MAX_KEPT_CONTENT = 256 * 1024
"""UTF-8 bytes of new content kept per added or modified text file."""
MAX_KEPT_TOTAL = 1024 * 1024
"""UTF-8 bytes of new content kept per diff in total, files taken in path order."""
MAX_DIFF_INPUT = 1024 * 1024
"""A side larger than this (bytes) gets no unified diff: ``difflib`` would be slow and the result cut."""
BINARY_SNIFF = 8192
"""Bytes looked at to call a file binary: a NUL byte in them, or text that is not UTF-8."""


@dataclass(frozen=True)
class FileChange:
    """One file added, removed or modified (content, executable bit, or link target)."""

    path: str
    """Relative POSIX path inside the workspace."""
    kind: ChangeKind
    """``added``, ``removed`` or ``modified``; a changed executable bit is ``modified``."""
    before: str | None
    """Hex sha256 of the content before (of the target, for a symbolic link); ``None`` when added."""
    after: str | None
    """Hex sha256 of the content after; ``None`` when removed."""
    binary: bool
    """The content (after, or before when removed) has a NUL byte or is not UTF-8."""
    text_diff: str | None
    """Unified diff with ``a/``/``b/`` headers (``/dev/null`` for an absent side), at most
    :data:`MAX_TEXT_DIFF` bytes and marked when cut; ``None`` for binary files and symbolic links, and
    a one-line note instead of hunks when a side is over :data:`MAX_DIFF_INPUT`."""
    content: str | None
    """The new full text of an added or modified text file, when within :data:`MAX_KEPT_CONTENT` and
    the diff's :data:`MAX_KEPT_TOTAL`; otherwise ``None``."""
    content_kept: bool
    """Whether this change can be re-applied from the record alone: true for removals, symbolic links
    and text kept in ``content``; false for binary or over-budget files."""
    executable: bool
    """The executable bit after the change (for a removed file, the bit it had)."""
    symlink: str | None = None
    """The new target when the path is now a symbolic link; ``None`` otherwise."""


@dataclass(frozen=True)
class FileDiff:
    """The changes of one workspace against its image, sorted by path."""

    changes: tuple[FileChange, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changes)

    def paths(self) -> list[str]:
        """The changed paths, sorted."""
        return [c.path for c in self.changes]

    def summary(self, limit: int = 5) -> str:
        """One line for people: ``2 modified, 1 added: src/a.py, src/b.py, new.txt``."""
        if not self.changes:
            return "no changes"
        counts = Counter(c.kind for c in self.changes)
        head = ", ".join(f"{counts[k]} {k}" for k in ("modified", "added", "removed") if counts[k])
        shown = ", ".join(self.paths()[:limit])
        more = f", … and {len(self.changes) - limit} more" if len(self.changes) > limit else ""
        return f"{head}: {shown}{more}"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_json` gives back an equal :class:`FileDiff`."""
        return {"changes": [asdict(c) for c in self.changes]}

    @classmethod
    def from_json(cls, data: Any) -> FileDiff:
        """The diff :meth:`to_json` wrote; :class:`WorkspaceError` naming the field if it is malformed."""
        if not isinstance(data, dict) or not isinstance(data.get("changes"), list):
            raise WorkspaceError("file diff: field 'changes' must be a list of changes")
        changes = [_change_from_json(i, item) for i, item in enumerate(data["changes"])]
        if [c.path for c in changes] != sorted({c.path for c in changes}):
            raise WorkspaceError("file diff: field 'changes' must be sorted by path with each path once")
        return cls(tuple(changes))


_STR_OR_NONE = {"before", "after", "text_diff", "content", "symlink"}
_BOOLS = {"binary", "content_kept", "executable"}


def _change_from_json(i: int, item: Any) -> FileChange:
    where = f"file diff: changes[{i}]"
    if not isinstance(item, dict):
        raise WorkspaceError(f"{where}: must be an object")
    names = {f.name for f in fields(FileChange)}
    unknown = set(item) - names
    if unknown:
        raise WorkspaceError(f"{where}: unknown field {sorted(unknown)[0]!r}; valid fields are {', '.join(sorted(names))}")
    for name in names - {"symlink"}:
        if name not in item:
            raise WorkspaceError(f"{where}: field {name!r} is missing")
    if not isinstance(item["path"], str) or not item["path"]:
        raise WorkspaceError(f"{where}.path: must be a non-empty string")
    if item["kind"] not in get_args(ChangeKind):
        raise WorkspaceError(f"{where}.kind: {item['kind']!r} is not one of {', '.join(get_args(ChangeKind))}")
    for name in _STR_OR_NONE:
        if item.get(name) is not None and not isinstance(item[name], str):
            raise WorkspaceError(f"{where}.{name}: must be a string or null")
    for name in _BOOLS:
        if not isinstance(item[name], bool):
            raise WorkspaceError(f"{where}.{name}: must be true or false")
    return FileChange(**item)


def looks_binary(data: bytes) -> bool:
    """A NUL byte in the first :data:`BINARY_SNIFF` bytes, or those bytes are not UTF-8 (a multi-byte
    character cut at the edge of the sample does not count)."""
    sample = data[:BINARY_SNIFF]
    if b"\x00" in sample:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=len(data) <= BINARY_SNIFF)
    except UnicodeDecodeError:
        return True
    return False


def as_text(data: bytes) -> str | None:
    """``data`` as text, or ``None`` if it is binary (see :func:`looks_binary`) or not UTF-8 further on."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def unified(path: str, before: str | None, after: str | None) -> str:
    """A ``git``-style unified diff of one file, at most :data:`MAX_TEXT_DIFF` UTF-8 bytes."""
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        (after or "").splitlines(keepends=True),
        fromfile=f"a/{path}" if before is not None else "/dev/null",
        tofile=f"b/{path}" if after is not None else "/dev/null",
    )
    out: list[str] = []
    used = 0
    total = 0
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        size = len(line.encode("utf-8"))
        total += size
        if used + size <= MAX_TEXT_DIFF and used == total - size:
            out.append(line)
            used += size
    if total > used:
        out.append(f"… [truncated {total - used:,} bytes]\n")
    return "".join(out)


def over_budget_note(path: str) -> str:
    """The stand-in for a unified diff once the diff's :data:`MAX_TEXT_DIFFS` are used up."""
    used_up = f"the {MAX_TEXT_DIFFS:,}-byte budget for this trial's line diffs is used up"
    return f"--- a/{path}\n+++ b/{path}\n… [no line diff: {used_up}]\n"


def too_large_note(path: str, size: int) -> str:
    """The stand-in for a unified diff when a side is over :data:`MAX_DIFF_INPUT`."""
    return f"--- a/{path}\n+++ b/{path}\n… [no line diff: {size:,} bytes is over the {MAX_DIFF_INPUT:,} byte limit]\n"
