"""Rebuild a trial's final tree from its recorded diff (for a regrade, when the copy is long gone)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from passhat.workspace import _fs
from passhat.workspace.copies import WorkspaceCopy
from passhat.workspace.diff import MAX_KEPT_CONTENT, MAX_KEPT_TOTAL, FileChange, FileDiff
from passhat.workspace.entries import FileEntry, link_entry
from passhat.workspace.errors import WorkspaceError
from passhat.workspace.paths import inside

_NOT_KEPT = f"binary, or over the {MAX_KEPT_CONTENT:,}-byte per-file or {MAX_KEPT_TOTAL:,}-byte per-diff budget"


def apply_file_diff(copy: WorkspaceCopy, diff: FileDiff) -> None:
    """Re-apply a recorded ``diff`` onto ``copy``, a fresh copy of the image it was taken against.

    Every change is checked before any is applied, so a refused diff leaves the copy as it was: a
    change whose content was not kept (binary or over budget) or whose file before the change does not
    match the record raises :class:`WorkspaceError` naming the path. When every content was kept,
    ``copy.digest()`` afterwards equals the digest of the tree the diff was taken from.
    """
    removed = {c.path for c in diff.changes if c.kind == "removed"}
    plan: list[tuple[FileChange, Path, bytes | None]] = []
    folders: list[Path] = []  # folders where the diff adds a file: emptied by its removals first
    for change in diff.changes:
        target = inside(copy.root, change.path, follow_symlinks=False)
        where = f"cannot re-apply the change to {change.path!r}"
        current = _entry_at(target, where, copy, removed, folders)
        if change.kind == "added" and current is not None:
            raise WorkspaceError(f"{where}: it was added, but the workspace already has it")
        if change.kind != "added":
            if current is None:
                raise WorkspaceError(f"{where}: the workspace does not have it")
            if current.sha256 != change.before:
                found = f"sha256 {str(change.before)[:12]} recorded, {current.sha256[:12]} found"
                raise WorkspaceError(f"{where}: its content before the change does not match the record ({found}): "
                                     "the fixture changed since the run")
        data: bytes | None = None
        if change.kind != "removed" and change.symlink is None and change.before != change.after:
            if not change.content_kept or change.content is None:
                raise WorkspaceError(f"{where}: its new content was not kept ({_NOT_KEPT})")
            data = change.content.encode("utf-8")
            if _fs.sha256_bytes(data) != change.after:
                changed = "redaction changed it when the run was written (--no-redact keeps it), or the record was edited"
                raise WorkspaceError(f"{where}: the kept content does not hash to the recorded sha256 "
                                     f"{str(change.after)[:12]} ({changed})")
        plan.append((change, target, data))
    for change, target, _ in plan:
        if change.kind == "removed":
            os.unlink(target)
    for folder in folders:
        _fs.remove_tree(str(folder))
    for change, target, data in plan:
        if change.kind != "removed":
            _apply_one(change, target, data)


def _entry_at(path: Path, where: str, copy: WorkspaceCopy, removed: set[str], folders: list[Path]) -> FileEntry | None:
    """What is at ``path`` now; a folder counts as absent if the diff removes every file in it."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return link_entry(os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        base = path.relative_to(copy.root).as_posix()
        inner = [f"{base}/{rel}" for rel, e in _fs.walk(str(path), ()) if not e.is_dir(follow_symlinks=False)]
        if set(inner) <= removed:
            folders.append(path)
            return None
    if not stat.S_ISREG(st.st_mode):
        raise WorkspaceError(f"{where}: it is a folder or special file in the workspace, not a file")
    return FileEntry(st.st_size, _fs.sha256_file(str(path)), bool(st.st_mode & stat.S_IXUSR))


def _apply_one(change: FileChange, target: Path, data: bytes | None) -> None:
    if data is None and change.symlink is None:  # only the executable bit changed
        os.chmod(target, _fs.file_mode(change.executable))
        return
    if os.path.lexists(target):
        os.unlink(target)  # never write through a link, and a link may become a file
    target.parent.mkdir(parents=True, exist_ok=True)
    if change.symlink is not None:
        os.symlink(change.symlink, target)
        return
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _fs.file_mode(change.executable))
    with os.fdopen(fd, "wb") as f:
        os.fchmod(fd, _fs.file_mode(change.executable))
        f.write(data or b"")
