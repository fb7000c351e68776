"""The do-nothing check: a case that passes when the agent does nothing measures nothing.

τ-bench's do-nothing agent scored above zero (RFC #129). Before a run, every case gets one trial with
an agent that returns immediately; cases it passes are reported (and recorded in the manifest).
"""

from __future__ import annotations

from passhat.cases import Suite
from passhat.episode import Episode
from passhat.runner.trial import run_trial
from passhat.seeding import derive_seed


async def _nothing(episode: Episode) -> None:
    return None


async def noop_passes(suite: Suite) -> list[str]:
    """Ids of the cases that a do-nothing agent passes (should be empty)."""
    passing = []
    for case in suite.cases:
        record = await run_trial(case, suite.domain_of(case), _nothing, 0, derive_seed("sanity", case.id))
        if record.outcome == "pass":
            passing.append(case.id)
    return passing
