"""The do-nothing check: a case that passes when the agent does nothing measures nothing.

τ-bench's do-nothing agent scored above zero (RFC #129). Before a run, every case gets one trial with
an agent that returns immediately; cases it passes are reported (and recorded in the manifest).
"""

from __future__ import annotations

import asyncio

from passhat.cases import Case, Suite
from passhat.episode import Episode
from passhat.runner.trial import run_trial
from passhat.seeding import derive_seed


async def _nothing(episode: Episode) -> None:
    return None


SANITY_CONCURRENCY = 4
"""Do-nothing trials at once: a workspace case's check runs the project's tests even for an agent that did nothing."""


async def noop_passes(suite: Suite) -> list[str]:
    """Ids of the cases that a do-nothing agent passes (should be empty), in suite order."""
    bound = asyncio.Semaphore(SANITY_CONCURRENCY)

    async def passes(case: Case) -> bool:
        async with bound:
            record = await run_trial(case, suite.domain_of(case), _nothing, 0, derive_seed("sanity", case.id))
        return record.outcome == "pass"

    results = await asyncio.gather(*(passes(c) for c in suite.cases))
    return [c.id for c, passed in zip(suite.cases, results, strict=True) if passed]
