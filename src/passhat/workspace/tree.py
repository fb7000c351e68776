"""Code workspaces: a fixture tree captured once per run, a private copy per trial, and its file diff.

A :class:`WorkspaceImage` is a private master copy of the fixture (a folder, or a git commit) with the
size, sha256 and executable bit of every file. :meth:`WorkspaceImage.restore` gives each trial a
:class:`WorkspaceCopy` in its own temporary folder; :meth:`WorkspaceCopy.diff` compares it with the
image. Only files count: folders (empty or not) and permission bits other than the owner's executable
bit are not part of a tree. Names in ``ignore`` (default :data:`DEFAULT_IGNORE`) and ``.git`` are left
out of images, diffs and digests alike.

The copy lives in :mod:`~passhat.workspace.copies`, the diff format in :mod:`~passhat.workspace.diff`,
re-application in :mod:`~passhat.workspace.apply`; all are importable from here. These calls block
(they walk and copy files); from async code run them with ``asyncio.to_thread``.
"""

from __future__ import annotations

import os
import stat
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType, TracebackType

from passhat.workspace import _fs, _git
from passhat.workspace.apply import apply_file_diff
from passhat.workspace.copies import WorkspaceCopy
from passhat.workspace.diff import MAX_KEPT_CONTENT, MAX_KEPT_TOTAL, MAX_TEXT_DIFF, FileChange, FileDiff
from passhat.workspace.entries import FileEntry, link_entry, tree_digest
from passhat.workspace.errors import WorkspaceError

__all__ = [
    "DEFAULT_IGNORE",
    "MAX_KEPT_CONTENT",
    "MAX_KEPT_TOTAL",
    "MAX_TEXT_DIFF",
    "FileChange",
    "FileDiff",
    "FileEntry",
    "WorkspaceCopy",
    "WorkspaceError",
    "WorkspaceImage",
    "apply_file_diff",
    "tree_digest",
]

DEFAULT_IGNORE: tuple[str, ...] = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.pyc")
"""Names (``fnmatch`` on each path component) left out of images, diffs and digests: Python and its
test tools write them as a side effect of running the tests, and that must not count as a change."""


class WorkspaceImage:
    """A fixture tree captured once per run into a private master copy.

    Build one with :meth:`from_dir` or :meth:`from_git`; later edits to the source do not reach it.
    ``.git`` is never part of an image. Close it (or use it as a context manager) after the copies made
    from it are discarded; a finalizer removes the master copy if the process exits first.
    """

    def __init__(self, tmp: str, files: dict[str, FileEntry], dirs: list[str], ignore: Sequence[str]) -> None:
        """Use :meth:`from_dir` or :meth:`from_git`."""
        self._tmp = tmp
        self._master = os.path.join(tmp, "tree")
        self._files = files
        self._dirs = dirs
        self.ignore: tuple[str, ...] = tuple(ignore)
        """The ignore patterns of this image, used by its copies too."""
        self.files: Mapping[str, FileEntry] = MappingProxyType(files)
        """Every file and symbolic link, by relative POSIX path."""
        self._digest = tree_digest(files)
        self._finalizer = weakref.finalize(self, _fs.remove_tree, tmp)

    @property
    def digest(self) -> str:
        """sha256 of the tree (:func:`tree_digest`): same files, same digest, wherever and whenever."""
        return self._digest

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` removed the master copy."""
        return not self._finalizer.alive

    @property
    def path(self) -> Path:
        """The master copy. Read it, never write it: every copy's diff is taken against it."""
        return Path(self._master)

    @property
    def size_bytes(self) -> int:
        """Total bytes of file content."""
        return sum(e.size for e in self._files.values())

    @classmethod
    def from_dir(cls, source: Path, *, overlays: Sequence[Path] = (),
                 ignore: Sequence[str] = DEFAULT_IGNORE) -> WorkspaceImage:
        """Snapshot the folder ``source``, with the files of each folder in ``overlays`` laid on top.

        Regular files, folders and symbolic links are kept; a link must point inside its folder (an
        absolute target inside it is rewritten as a relative one, so copies point at themselves). A
        link leading outside, a FIFO, socket or device is refused naming its path. ``.git`` and names
        matching ``ignore`` are left out. An overlay's file replaces the file at the same path (or adds
        it); folders merge; a file where the base has a folder (or the reverse) is refused. Overlays
        make variants of one tree — the same package with one bug planted — without copying it.
        """
        tmp = tempfile.mkdtemp(prefix="passhat-image-")
        try:
            master = os.path.join(tmp, "tree")
            os.mkdir(master)
            files: dict[str, FileEntry] = {}
            dirs: dict[str, None] = {}  # ordered, parents first, and a set for the layers' checks
            for layer in (source, *overlays):
                _copy_layer(layer, master, files, dirs, ignore)
        except BaseException:
            _fs.remove_tree(tmp)
            raise
        return cls(tmp, files, list(dirs), ignore)

    @classmethod
    def from_git(cls, repo: Path, commit: str, *, ignore: Sequence[str] = DEFAULT_IGNORE) -> WorkspaceImage:
        """Snapshot the tree of ``commit`` in the local repository ``repo`` (no fetch, no network).

        Files are the blobs as committed (no checkout filters or line-ending conversion). Errors name
        the repository and the commit: git missing, not a repository, unknown commit, a submodule, a
        symbolic link leading outside the tree.
        """
        tmp = tempfile.mkdtemp(prefix="passhat-image-")
        master = os.path.join(tmp, "tree")
        os.mkdir(master)
        files: dict[str, FileEntry] = {}
        dirs: list[str] = []
        made = {""}
        links: list[tuple[str, str]] = []

        def sink(path: str, data: bytes, mode: str) -> None:
            parts = path.split("/")
            if any(_fs.ignored(p, ignore) for p in parts):
                return
            for i in range(1, len(parts)):
                folder = "/".join(parts[:i])
                if folder not in made:
                    os.mkdir(os.path.join(master, folder), 0o755)
                    made.add(folder)
                    dirs.append(folder)
            dst = os.path.join(master, path)
            if mode == "120000":
                links.append((path, os.fsdecode(data)))
                return
            executable = mode == "100755"
            fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _fs.file_mode(executable))
            with os.fdopen(fd, "wb") as f:
                os.fchmod(fd, _fs.file_mode(executable))
                f.write(data)
            files[path] = FileEntry(len(data), _fs.sha256_bytes(data), executable)

        try:
            _git.read_tree(repo, commit, sink)
            for path, target in links:
                where = f"{repo}: commit {commit!r}: symbolic link {path!r}"
                if os.path.isabs(target):
                    raise WorkspaceError(_LINK_OUTSIDE.format(where=where, target=target))
                os.symlink(target, os.path.join(master, path))
                files[path] = link_entry(target)
            for path, target in links:  # once all exist: a link can lead out only through another one
                _inside_link(master, path, target, f"{repo}: commit {commit!r}: symbolic link {path!r}")
        except BaseException:
            _fs.remove_tree(tmp)
            raise
        return cls(tmp, files, dirs, ignore)

    def restore(self, *, parent: Path | None = None) -> WorkspaceCopy:
        """A new private copy of the tree in its own temporary folder (mode 0700).

        The folder is made in ``parent``, else in the system's temporary folder (``TMPDIR``). Making
        files is most of the cost: a tmpfs such as ``/dev/shm`` is several times faster than a disk
        file system, at the price of memory (see ``bench/bench_workspace.py``).
        """
        if self.closed:
            raise WorkspaceError(f"workspace image {self.digest[:12]} is closed; restore copies before closing it")
        root = tempfile.mkdtemp(prefix="passhat-ws-", dir=parent)
        try:
            for rel in self._dirs:
                os.mkdir(os.path.join(root, rel), 0o755)
            for rel, entry in self._files.items():
                if entry.symlink is not None:
                    os.symlink(entry.symlink, os.path.join(root, rel))
                else:
                    _fs.copy_file(os.path.join(self._master, rel), os.path.join(root, rel), entry.executable)
            return WorkspaceCopy(self, Path(root))
        except BaseException:
            _fs.remove_tree(root)
            raise

    def close(self) -> None:
        """Remove the master copy. Copies already made keep their files but can no longer be diffed."""
        self._finalizer()

    def __enter__(self) -> WorkspaceImage:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"WorkspaceImage({len(self._files)} files, {self.size_bytes:,} bytes, digest {self.digest[:12]})"


def _copy_layer(source: Path, master: str, files: dict[str, FileEntry], dirs: dict[str, None],
                ignore: Sequence[str]) -> None:
    """Copy the folder ``source`` into ``master``, replacing files already there (see ``from_dir``)."""
    src = os.path.realpath(source)
    _fs.check_dir(src, "workspace fixture folder")
    for rel, entry in _fs.walk(src, ignore):
        dst = os.path.join(master, rel)
        if entry.is_dir(follow_symlinks=False) and not entry.is_symlink():
            if rel in dirs:
                continue
            if rel in files:
                raise WorkspaceError(f"{source}: {rel!r} is a folder, but a layer below has a file there")
            os.mkdir(dst, 0o755)
            dirs[rel] = None
            continue
        if rel in dirs:
            raise WorkspaceError(f"{source}: {rel!r} is a file, but a layer below has a folder there")
        if rel in files:
            os.unlink(dst)
        if entry.is_symlink():
            target = _inside_link(src, rel, os.readlink(entry.path), f"{source}: symbolic link {rel!r}")
            os.symlink(target, dst)
            files[rel] = link_entry(target)
        elif entry.is_file(follow_symlinks=False):
            executable = bool(entry.stat(follow_symlinks=False).st_mode & stat.S_IXUSR)
            _fs.copy_file(entry.path, dst, executable)
            files[rel] = FileEntry(os.lstat(dst).st_size, _fs.sha256_file(dst), executable)
        else:
            valid = "an image holds files, folders and symbolic links only"
            raise WorkspaceError(f"{source}: {rel!r} is a FIFO, socket or device; {valid}")


_LINK_OUTSIDE = "{where} points outside the tree (to {target!r}); only links to files inside the fixture can be copied"


def _inside_link(root: str, rel: str, target: str, where: str) -> str:
    """``target`` of the link at ``rel`` if it stays inside ``root`` (made relative if absolute)."""
    parent = os.path.dirname(os.path.join(root, rel))
    if os.path.isabs(target):
        target = os.path.relpath(target, parent) if _within(root, os.path.normpath(target)) else target
    lexical = os.path.normpath(os.path.join(parent, target))
    resolved = os.path.realpath(os.path.join(root, rel))
    if os.path.isabs(target) or not _within(root, lexical) or not _within(os.path.realpath(root), resolved):
        raise WorkspaceError(_LINK_OUTSIDE.format(where=where, target=target))
    return target


def _within(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
