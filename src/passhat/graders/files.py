"""Workspace checks: did the commands succeed, which files changed, are the protected ones intact.

They read the trial's file diff (added / removed / modified against the fixture, caches left out) and
the final tree. ``command_succeeds`` needs a process, which must not block the event loop other trials
share, so the runner runs those commands *before* grading (:func:`run_commands`) and the check only
reads the result. A check asked of a trial without a workspace fails closed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fnmatch
import os
import re
from collections.abc import Mapping
from pathlib import Path

from passhat.cases import Case
from passhat.cases import assertions as A
from passhat.cases.globs import matches
from passhat.graders.base import TrialView
from passhat.graders.checks import Check
from passhat.workspace.paths import WorkspacePathError, inside
from passhat.workspace.sandbox import CommandResult, run_command
from passhat.workspace.tree import DEFAULT_IGNORE

SHOWN = 5
"""Paths named in a reason before "and N more"."""
MAX_MATCHED_FILE = 32 * 1024 * 1024
"""Largest file ``file_matches`` reads (a larger one fails the check, saying so)."""
OUTPUT_IN_REASON = 600
"""Characters of a failed command's output quoted in its reason (the whole output is in ``details``)."""


def command_assertions(case: Case) -> list[tuple[int, A.CommandSucceeds]]:
    """The case's ``command_succeeds`` assertions with their positions (the key of their results)."""
    return [(i, a) for i, a in enumerate(case.assertions) if isinstance(a, A.CommandSucceeds)]


async def run_commands(case: Case, root: Path, env: Mapping[str, str] | None = None) -> dict[int, CommandResult]:
    """Run the case's ``command_succeeds`` commands on the final tree, one after another (a second may
    depend on what a first built), each in the sandbox with its own time limit and the domain's ``env``."""
    return {i: await run_command(root, a.run, timeout_s=a.timeout, env=env) for i, a in command_assertions(case)}


def run_commands_blocking(case: Case, root: Path, env: Mapping[str, str] | None = None) -> dict[int, CommandResult]:
    """:func:`run_commands` for synchronous callers (re-grading), whether or not an event loop is running."""
    if not command_assertions(case):
        return {}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run_commands(case, root, env)).result()


def _listed(paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def _needs_workspace(view: TrialView) -> Path:
    if view.workspace is None or view.files is None:
        raise ValueError("this trial has no workspace (the case's domain declares none)")
    return view.workspace


def command_succeeds(view: TrialView, a: A.CommandSucceeds) -> tuple[bool, str]:
    _needs_workspace(view)
    index = next((i for i, b in enumerate(view.case.assertions) if b is a), None)
    result = view.commands.get(index) if index is not None else None
    if result is None:
        raise ValueError(f"the command {a.run!r} was not run on the final workspace")
    how = "" if result.isolation != "none" else " (no sandbox on this machine)"
    if result.timed_out:
        return False, f"`{a.run}` did not finish within {a.timeout:g}s{how}"
    if result.exit_code == a.exit_code:
        return True, f"`{a.run}` exited {result.exit_code}{how}"
    tail = (result.stdout + result.stderr).strip()[-OUTPUT_IN_REASON:]
    return False, f"`{a.run}` exited {result.exit_code}, expected {a.exit_code}{how}:\n{tail}"


def file_unchanged(view: TrialView, a: A.FileUnchanged) -> tuple[bool, str]:
    _needs_workspace(view)
    touched = [f"{c.path} ({c.kind})" for c in view.files.changes if matches(c.path, a.paths)]  # type: ignore[union-attr]
    if touched:
        return False, f"{len(touched)} protected file(s) changed: {_listed(touched)}"
    return True, f"no file under {', '.join(a.paths)} changed"


def _final(view: TrialView, path: str) -> Path:
    root = _needs_workspace(view)
    try:
        return inside(root, path)
    except WorkspacePathError as exc:
        raise ValueError(str(exc)) from None


def file_exists(view: TrialView, a: A.FileExists) -> tuple[bool, str]:
    target = _final(view, a.path)
    if target.is_file():
        return True, f"{a.path} exists"
    return False, f"{a.path}: expected a file, " + ("found a directory" if target.is_dir() else "nothing is there")


def file_absent(view: TrialView, a: A.FileAbsent) -> tuple[bool, str]:
    """No file at ``path`` nor under it. A folder holding no file is absent: folders are not part of a tree
    (the file diff never shows one, and a re-grade cannot rebuild one), so the verdict must not see it."""
    root = _needs_workspace(view)
    try:
        target = inside(root, a.path, follow_symlinks=False)  # a link is something there, wherever it points
    except WorkspacePathError as exc:
        raise ValueError(str(exc)) from None
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        kind = "symbolic link" if target.is_symlink() else "file" if target.is_file() else "FIFO, socket or device"
        return False, f"{a.path}: expected nothing there, found a {kind}"
    inner = _first_file(target) if target.is_dir() else None
    if inner is not None:
        return False, f"{a.path}: expected nothing there, found a directory holding {Path(inner).relative_to(root).as_posix()}"
    return True, f"{a.path} is absent" + (" (an empty directory is not part of the tree)" if target.is_dir() else "")


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


def file_matches(view: TrialView, a: A.FileMatches) -> tuple[bool, str]:
    target = _final(view, a.path)
    if not target.is_file():
        return False, f"{a.path}: no such file, so /{a.pattern}/ cannot be found in it"
    size = target.stat().st_size
    if size > MAX_MATCHED_FILE:  # the agent decides how large; the harness grading every trial must not run out of memory
        return False, f"{a.path}: {size:,} bytes, over the {MAX_MATCHED_FILE:,} bytes file_matches reads"
    text = target.read_bytes().decode("utf-8", "replace")
    if re.search(a.pattern, text):
        return True, f"/{a.pattern}/ found in {a.path}"
    return False, f"/{a.pattern}/ not found in {a.path}"


def files_outside(view: TrialView, allowed: list[str]) -> list[str]:
    """File changes outside the ``allowed`` globs (for ``unchanged_except``), as ``path (kind)``."""
    if view.files is None:
        return []
    return [f"{c.path} ({c.kind})" for c in view.files.changes if not matches(c.path, allowed)]


FILE_CHECKS: Mapping[str, Check] = {
    "command_succeeds": command_succeeds, "file_unchanged": file_unchanged, "file_exists": file_exists,
    "file_absent": file_absent, "file_matches": file_matches,
}
