"""Running a case's ``command_succeeds`` commands on the final workspace, before it is graded.

A command needs a process, which must not block the event loop other trials share, so the runner runs
the commands *before* grading (:func:`run_commands`) and the assertion's check only reads the result
(``cases/assertions/commands.py``). A re-grade runs them on the rebuilt tree (:func:`run_commands_blocking`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from pathlib import Path

from passhat.cases import Case
from passhat.cases.assertions.commands import CommandSucceeds
from passhat.workspace.sandbox import CommandResult, run_command


def command_assertions(case: Case) -> list[tuple[int, CommandSucceeds]]:
    """The case's ``command_succeeds`` assertions with their positions (the key of their results)."""
    return [(i, a) for i, a in enumerate(case.assertions) if isinstance(a, CommandSucceeds)]


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
