"""The tools of a code workspace: read, list, search, write, delete files and run commands.

They act on the trial's private copy of the workspace fixture (``ctx.world.workspace``) and nothing
else: every path goes through :func:`passhat.workspace.paths.inside`, which refuses absolute paths,
``..`` escapes and symlinks that lead out, and commands run in the sandbox of
:mod:`passhat.workspace.sandbox` (no network, scrubbed environment, no writes outside the copy where
the machine allows it). A domain lists them like any other tools (``tools=WORKSPACE_TOOLS``), so
permissions, faults and the trajectory record apply unchanged: a ``timeout`` fault on ``run_command``
is a test run that never answered.

Reading, listing and searching are ``read`` tools; writing, deleting and running a command are
``write`` tools (a command can change any file of the copy).
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from passhat.tools.context import ToolContext, ToolFailure
from passhat.tools.declare import tool
from passhat.workspace.paths import WorkspacePathError, inside
from passhat.workspace.sandbox import run_command as sandboxed
from passhat.workspace.tree import DEFAULT_IGNORE, WorkspaceCopy

MAX_READ = 256 * 1024
"""Bytes of a file ``read_file`` returns; the rest is cut with a note (an agent can ask for less text)."""
MAX_WRITE = 1024 * 1024
"""Largest content ``write_file`` accepts."""
MAX_MATCHES = 200
"""Matches ``search`` returns before it says ``truncated``."""
MAX_SEARCHED_FILE = 1024 * 1024
"""Files larger than this are not searched (they are data, not code)."""
MAX_COMMAND_SECONDS = 600.0
"""Upper bound on ``run_command``'s ``timeout`` (the trial's own time limit still applies)."""
MAX_ENTRIES = 1000
"""Entries ``list_dir`` returns before it says ``truncated``."""


def ignored(name: str) -> bool:
    """A cache the diff leaves out too (``__pycache__``, ``.pytest_cache``, ...): not shown to the agent."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in DEFAULT_IGNORE)


def _copy(ctx: ToolContext) -> WorkspaceCopy:
    copy = ctx.world.workspace
    if copy is None:
        raise ToolFailure("this domain has no workspace: the file tools need `Domain(workspace=...)`")
    return copy


def _path(ctx: ToolContext, path: str) -> tuple[WorkspaceCopy, Path]:
    copy = _copy(ctx)
    try:
        return copy, inside(copy.root, path)
    except WorkspacePathError as exc:
        raise ToolFailure(str(exc)) from None


def _rel(copy: WorkspaceCopy, target: Path) -> str:
    rel = target.relative_to(copy.root).as_posix()
    return rel or "."


@tool(kind="read")
def read_file(ctx: ToolContext, path: str) -> dict[str, Any]:
    """Read a text file of the workspace.

    Args:
        path: The file's path relative to the workspace root, e.g. "src/pkg/module.py".
    """
    copy, target = _path(ctx, path)
    if not target.is_file():
        raise ToolFailure(f"{path}: no such file" + (" (it is a directory; use list_dir)" if target.is_dir() else ""))
    with target.open("rb") as f:
        data = f.read(MAX_READ + 1)
    if b"\0" in data[:8192]:
        raise ToolFailure(f"{path}: a binary file ({target.stat().st_size} bytes), not shown")
    out: dict[str, Any] = {"path": _rel(copy, target), "content": data[:MAX_READ].decode("utf-8", "replace")}
    if len(data) > MAX_READ:
        out["truncated"] = f"only the first {MAX_READ} bytes of {target.stat().st_size} are shown"
    return out


@tool(kind="read")
def list_dir(ctx: ToolContext, path: str = ".") -> dict[str, Any]:
    """List a directory of the workspace (names, kinds and sizes), caches left out.

    Args:
        path: The directory relative to the workspace root; "." is the root.
    """
    copy, target = _path(ctx, path)
    if not target.is_dir():
        raise ToolFailure(f"{path}: no such directory")
    entries = []
    for entry in sorted(os.scandir(target), key=lambda e: e.name):
        if ignored(entry.name):
            continue
        kind = "symlink" if entry.is_symlink() else "dir" if entry.is_dir() else "file"
        size = entry.stat(follow_symlinks=False).st_size if kind == "file" else None
        entries.append({"name": entry.name, "type": kind, "size": size})
    out: dict[str, Any] = {"path": _rel(copy, target), "entries": entries[:MAX_ENTRIES]}
    if len(entries) > MAX_ENTRIES:
        out["truncated"] = True
    return out


def _files_under(target: Path) -> list[Path]:
    if target.is_file():
        return [target]
    found: list[Path] = []
    for folder, dirs, files in os.walk(target):  # does not follow symlinked directories
        dirs[:] = sorted(d for d in dirs if not ignored(d) and d != ".git")
        found += [Path(folder) / f for f in sorted(files) if not ignored(f)]
    return found


@tool(kind="read")
def search(ctx: ToolContext, text: str, path: str = ".") -> dict[str, Any]:
    """Find lines containing a text (exact, case-sensitive substring; not a regular expression).

    Args:
        text: The text to look for, e.g. "def median".
        path: A file or directory to search, relative to the workspace root; "." searches everything.
    """
    if not text:
        raise ToolFailure("text: give the text to look for")
    copy, target = _path(ctx, path)
    if not target.exists():
        raise ToolFailure(f"{path}: no such file or directory")
    matches: list[dict[str, Any]] = []
    for file in _files_under(target):
        st = file.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SEARCHED_FILE:
            continue
        data = file.read_bytes()
        if b"\0" in data[:8192]:
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if text in line:
                matches.append({"path": _rel(copy, file), "line": number, "text": line[:500]})
                if len(matches) > MAX_MATCHES:
                    return {"matches": matches[:MAX_MATCHES], "truncated": True}
    return {"matches": matches, "truncated": False}


@tool(kind="write", idempotent=True)
def write_file(ctx: ToolContext, path: str, content: str) -> dict[str, Any]:
    """Create or replace a text file of the workspace (parent directories are created).

    Args:
        path: The file's path relative to the workspace root.
        content: The file's whole new content (UTF-8 text).
    """
    copy, target = _path(ctx, path)
    data = content.encode("utf-8")
    if len(data) > MAX_WRITE:
        raise ToolFailure(f"content: {len(data)} bytes is more than the {MAX_WRITE} a file may have here")
    if target == copy.root or target.is_dir():
        raise ToolFailure(f"{path}: is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    target = inside(copy.root, path)  # again: a parent just created cannot be a link out, but check anyway
    target.write_bytes(data)
    return {"path": _rel(copy, target), "bytes": len(data)}


@tool(kind="write")
def delete_file(ctx: ToolContext, path: str) -> dict[str, Any]:
    """Delete a file, or a directory with everything in it.

    Args:
        path: The file or directory relative to the workspace root (not the root itself).
    """
    copy, target = _path(ctx, path)
    if target == copy.root:
        raise ToolFailure("the workspace root cannot be deleted")
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    else:
        raise ToolFailure(f"{path}: no such file or directory")
    return {"path": _rel(copy, target), "deleted": True}


@tool(kind="write", idempotent=True)
async def run_command(ctx: ToolContext, command: str, timeout: float = 60.0) -> dict[str, Any]:
    """Run a shell command in the workspace root, e.g. "python -m pytest -q".

    The command has no network and a scrubbed environment; `python` and `pytest` are available. Output
    is cut at 64 KiB per stream.

    Args:
        command: The command line, run by /bin/sh.
        timeout: Seconds before the command is killed (at most 600).
    """
    if not command.strip():
        raise ToolFailure("command: give a command to run")
    if not 0 < timeout <= MAX_COMMAND_SECONDS:
        raise ToolFailure(f"timeout: {timeout:g} is not between 0 and {MAX_COMMAND_SECONDS:g} seconds")
    result = await sandboxed(_copy(ctx).root, command, timeout_s=timeout, env=ctx.world.command_env)
    return {"exit_code": result.exit_code, "timed_out": result.timed_out, "stdout": result.stdout,
            "stderr": result.stderr, "truncated": result.truncated}


WORKSPACE_TOOLS = (read_file, list_dir, search, write_file, delete_file, run_command)
"""The file tools, for ``Domain(workspace=..., tools=WORKSPACE_TOOLS)`` (add your own beside them)."""
