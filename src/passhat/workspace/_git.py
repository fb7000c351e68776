"""Read the tree of a git commit into a folder, exactly as committed.

Uses ``git ls-tree`` and ``git cat-file --batch`` rather than ``git archive``: an archive applies the
repository's ``export-ignore`` and ``export-subst`` attributes, so its files can differ from the commit.
Blobs are written as stored (no checkout filters, no line-ending conversion; Git LFS files stay pointers).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from passhat.workspace.errors import WorkspaceError

FileSink = Callable[[str, bytes, str], None]
"""Receives (relative POSIX path, blob content, git mode) for each file or symbolic link."""


def _run(repo: Path, commit: str, args: list[str]) -> tuple[int, bytes, str]:
    """(exit code, stdout, last line of stderr) of ``git -C repo ARGS``."""
    git = shutil.which("git")
    if git is None:
        raise WorkspaceError(f"{repo}: cannot read commit {commit!r}: git is not installed (no 'git' on PATH)")
    try:
        done = subprocess.run([git, "-C", str(repo), *args], capture_output=True, check=False,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except OSError as exc:
        raise WorkspaceError(f"{repo}: cannot run git for commit {commit!r}: {exc}") from exc
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return done.returncode, done.stdout, lines[-1] if lines else ""


def _git(repo: Path, commit: str, *args: str) -> bytes:
    code, out, err = _run(repo, commit, list(args))
    if code != 0:
        raise WorkspaceError(f"{repo}: git {args[0]} failed for commit {commit!r}: {err or f'exit {code}'}")
    return out


def resolve(repo: Path, commit: str) -> str:
    """The full object name of ``commit`` in ``repo``; :class:`WorkspaceError` naming both if unknown."""
    if not os.path.isdir(repo):
        raise WorkspaceError(f"{repo}: git repository does not exist or is not a folder")
    if not commit or commit.startswith("-") or "\x00" in commit:
        raise WorkspaceError(f"{repo}: {commit!r} is not a commit name (give a hash, branch or tag)")
    code, _, err = _run(repo, commit, ["rev-parse", "--git-dir"])
    if code != 0:
        raise WorkspaceError(f"{repo}: not a git repository, cannot read commit {commit!r}: {err}")
    code, out, err = _run(repo, commit, ["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"])
    if code != 0:
        raise WorkspaceError(f"{repo}: unknown commit {commit!r} (no commit by that name in this repository)")
    return out.decode().strip()


def read_tree(repo: Path, commit: str, sink: FileSink) -> str:
    """Send every file and symbolic link of ``commit`` to ``sink``; returns the full commit hash.

    A submodule is refused: its files are not in this repository, and a fixture silently missing them
    would mislead every trial.
    """
    full = resolve(repo, commit)
    listing = _git(repo, commit, "ls-tree", "-r", "-z", "--full-tree", full)
    entries: list[tuple[str, str, str]] = []
    for record in listing.split(b"\x00"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, obj = meta.decode().split()
        path = os.fsdecode(raw_path)
        if kind == "commit":
            hint = "build the image from a checkout with WorkspaceImage.from_dir"
            raise WorkspaceError(f"{repo}: commit {commit!r} has a submodule at {path!r}; an image cannot include it ({hint})")
        if kind == "blob":
            entries.append((path, mode, obj))
    if not entries:
        return full
    _cat_blobs(repo, commit, entries, sink)
    return full


def _cat_blobs(repo: Path, commit: str, entries: list[tuple[str, str, str]], sink: FileSink) -> None:
    git = shutil.which("git") or "git"
    proc = subprocess.Popen([git, "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    request = b"".join(obj.encode() + b"\n" for _, _, obj in entries)

    def feed() -> None:  # a thread, so a full output pipe cannot stall our writes (and theirs)
        try:
            proc.stdin.write(request)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        for path, mode, _ in entries:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                answer = b" ".join(header).decode("utf-8", "replace")
                raise WorkspaceError(f"{repo}: cannot read {path!r} at commit {commit!r} (git cat-file answered {answer!r})")
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after each object
            sink(path, data, mode)
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
        writer.join()
        if proc.stderr is not None:
            proc.stderr.close()
