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

import errno
import fnmatch
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from passhat.tools.context import ToolContext, ToolFailure
from passhat.tools.declare import tool
from passhat.workspace.beneath import make_folders_beneath, open_beneath
from passhat.workspace.bounds import WorkspaceBounds
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
MAX_SEARCHED_TOTAL = 32 * 1024 * 1024
"""Bytes one ``search`` reads in all before it stops and says ``truncated``: the tools run on the event
loop every trial shares, and a tree an agent filled with files must not stall the others (~50 ms here)."""
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
    except OSError as exc:  # a link that became a folder while it was read (a process of the agent racing us)
        raise ToolFailure(f"{path}: cannot resolve it: {exc.strerror or exc}; it changed while it was read") from None


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
    data = _read_regular(copy, target, MAX_READ + 1)
    if data is None:
        raise ToolFailure(f"{path}: not a regular file (a FIFO, socket or device)")
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
    try:  # listed through a descriptor opened beneath the copy: a folder swapped for a link meanwhile fails
        folder = _open_in_copy(copy, target, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ToolFailure(f"{path}: cannot list it: {_escape_or(exc)}") from None
    try:
        with os.scandir(folder) as scan:
            found = sorted(scan, key=lambda e: e.name)
        for entry in found:
            if ignored(entry.name):
                continue
            kind = "symlink" if entry.is_symlink() else "dir" if entry.is_dir(follow_symlinks=False) else "file"
            try:
                size = entry.stat(follow_symlinks=False).st_size if kind == "file" else None
            except FileNotFoundError:  # removed while listed
                continue
            entries.append({"name": entry.name, "type": kind, "size": size})
    finally:
        os.close(folder)
    out: dict[str, Any] = {"path": _rel(copy, target), "entries": entries[:MAX_ENTRIES]}
    if len(entries) > MAX_ENTRIES:
        out["truncated"] = True
    return out


def _root_fd(copy: WorkspaceCopy) -> int:
    return os.open(copy.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


def _open_in_copy(copy: WorkspaceCopy, target: Path, flags: int = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) -> int:
    """A descriptor of ``target`` (by default a folder, as ``O_PATH``) opened beneath the copy's root: a folder
    swapped for a link after the path was checked fails the open instead of reaching outside."""
    rel = target.relative_to(copy.root).as_posix()
    if rel in ("", "."):
        return os.open(copy.root, flags)
    root = _root_fd(copy)
    try:
        return open_beneath(root, rel, flags)
    finally:
        os.close(root)


def _escape_or(exc: OSError) -> str:
    if exc.errno in (errno.EXDEV, errno.ELOOP):
        return "a symbolic link on the way leads outside the workspace"
    return str(exc.strerror or exc)


def _read_regular(copy: WorkspaceCopy, target: Path, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of the regular file ``target``; ``None`` if something else is there now.

    Opened beneath the copy's folder (:mod:`passhat.workspace.beneath`: a folder swapped for a link after
    the check cannot make it read outside), without blocking and checked on the open file: a FIFO swapped
    in after a check would block the read, and with it the event loop every trial shares.
    """
    try:
        fd = _open_in_copy(copy, target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None


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
    budget = MAX_SEARCHED_TOTAL
    for file in _files_under(target):
        st = file.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SEARCHED_FILE:
            continue
        if st.st_size > budget:
            note = f"stopped after reading {MAX_SEARCHED_TOTAL // (1024 * 1024)} MiB of files; search a narrower path"
            return {"matches": matches, "truncated": True, "note": note}
        data = _read_regular(copy, file, MAX_SEARCHED_FILE)
        if data is None or b"\0" in data[:8192]:
            continue
        budget -= len(data)
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
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800") survives JSON but is not text
        raise ToolFailure(f"content: not valid text at character {exc.start} ({exc.reason})") from None
    if len(data) > MAX_WRITE:
        raise ToolFailure(f"content: {len(data)} bytes is more than the {MAX_WRITE} a file may have here")
    if target == copy.root or target.is_dir():
        raise ToolFailure(f"{path}: is a directory")
    rel = target.relative_to(copy.root)
    try:
        root = _root_fd(copy)
        try:
            # every folder opened beneath the one above it: a folder the agent's process swaps for a link
            # after the check above makes the open fail, never write outside (passhat.workspace.beneath)
            parent = make_folders_beneath(root, rel.parent.as_posix())
            try:
                _write_regular(parent, rel.name, data, path)
            finally:
                os.close(parent)
        finally:
            os.close(root)
    except OSError as exc:  # a parent that is a file, a full disk: the agent's problem to see, not a tool bug
        if exc.errno in (errno.EXDEV, errno.ELOOP):
            raise ToolFailure(f"{path}: a symbolic link on the way leads outside the workspace") from None
        raise ToolFailure(f"{path}: cannot write: {exc.strerror or exc}") from None
    return {"path": _rel(copy, target), "bytes": len(data)}


def _write_regular(folder: int, name: str, data: bytes, path: str) -> None:
    """Write ``data`` to the regular file ``name`` of the open ``folder``, made if missing; anything else there
    is refused.

    Opened without blocking: a FIFO the agent's command made would otherwise block the open until a
    reader comes, and the tools run on the event loop every trial shares — the whole run would hang.
    """
    refused = f"{path}: not a regular file (a FIFO, socket or device); delete it first"
    try:
        fd = open_beneath(folder, name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise ToolFailure(refused) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolFailure(refused)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


@tool(kind="write")
def delete_file(ctx: ToolContext, path: str) -> dict[str, Any]:
    """Delete a file, or a directory with everything in it (a symbolic link itself, not what it points to).

    Args:
        path: The file or directory relative to the workspace root (not the root itself).
    """
    copy = _copy(ctx)
    try:  # a symbolic link is deleted itself, never what it points to
        target = inside(copy.root, path, follow_symlinks=False)
    except WorkspacePathError as exc:
        raise ToolFailure(str(exc)) from None
    if target == copy.root:
        raise ToolFailure("the workspace root cannot be deleted")
    try:  # through a descriptor of the parent opened beneath the copy: a link swapped in cannot redirect it
        parent = _open_in_copy(copy, target.parent)
        try:
            info = os.stat(target.name, dir_fd=parent, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(target.name, dir_fd=parent)  # descends by descriptors, never through a link
            else:
                os.unlink(target.name, dir_fd=parent)
        finally:
            os.close(parent)
    except FileNotFoundError:
        raise ToolFailure(f"{path}: no such file or directory") from None
    except OSError as exc:
        raise ToolFailure(f"{path}: cannot delete: {_escape_or(exc)}") from None
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
    result = await sandboxed(_copy(ctx).root, command, timeout_s=timeout, env=ctx.world.command_env,
                             bounds=getattr(ctx.world, "workspace_bounds", None) or WorkspaceBounds())
    if result.exceeded:
        tail = result.stderr.strip()[-2000:]
        raise ToolFailure(f"run_command: {result.exceeded}" + (f"; stderr: …{tail}" if tail else ""))
    return {"exit_code": result.exit_code, "timed_out": result.timed_out, "stdout": result.stdout,
            "stderr": result.stderr, "truncated": result.truncated}


WORKSPACE_TOOLS = (read_file, list_dir, search, write_file, delete_file, run_command)
"""The file tools, for ``Domain(workspace=..., tools=WORKSPACE_TOOLS)`` (add your own beside them)."""
