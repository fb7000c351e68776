"""Workspace preflight: can the commands of a domain's trials run here at all?

A workspace's checks run the project's own commands (its tests) with the interpreter passhat runs
under. If that interpreter lacks what the project needs (pytest, numpy, …), every ``command_succeeds``
fails, and each trial would be graded a failure of the agent — an outage of the environment counted
against the agent. A domain's ``preflight`` command (e.g. ``python -c "import pytest"``) runs once per
run, before any trial, in a fresh copy of a workspace its selected cases use; if it fails the run stops
as bad input, saying what failed.
"""

from __future__ import annotations

import asyncio

from passhat.cases import Suite
from passhat.errors import PasshatError
from passhat.workspace.sandbox import run_command

PREFLIGHT_SECONDS = 120.0


async def check_preflight(suite: Suite) -> None:
    """Run each domain's ``preflight`` once; :class:`PasshatError` naming the domain and the output if one fails."""
    checked: set[str] = set()
    for case in suite.cases:
        domain = suite.domain_of(case)
        if domain.preflight is None or domain.name in checked or case.fixture not in domain.workspaces:
            continue
        checked.add(domain.name)
        copy = await asyncio.to_thread(domain.copy_workspace, case.fixture)
        assert copy is not None  # the fixture has a workspace (checked above)
        try:
            result = await run_command(copy.root, domain.preflight, timeout_s=PREFLIGHT_SECONDS, env=domain.command_env)
        finally:
            await asyncio.to_thread(copy.discard)
        if not result.ok:
            how = "did not finish" if result.timed_out else f"exited {result.exit_code}"
            tail = (result.stdout + result.stderr).strip()[-500:]
            raise PasshatError(f"domain {domain.name!r}: preflight `{domain.preflight}` {how} in a copy of workspace "
                               f"{case.fixture!r}, so every command of its trials would fail whatever the agent did; "
                               f"install what the project needs into the interpreter passhat runs under: {tail}")
