"""Play a fixed trajectory of an imported τ² case as a real trial: the gold actions, or a variant of them.

A scripted agent makes the agent's calls in order; when the next call is the user's (telecom's phone), the
agent asks the user, and a scripted user makes that call through the same tool boundary, as the user's
call. The agent then says each given text (τ²'s ``communicate_info``). The trial runs through passhat's
runner like any other, so what it checks is the import: the gold trajectory must pass every required
code-decidable grade, and a perturbed one must fail where τ²'s evaluator says it fails
(``bench/bench_tau2.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from passhat.cases import Case
from passhat.domain import Domain
from passhat.episode import Episode
from passhat.runner.records import TrialRecord
from passhat.runner.trial import run_trial
from passhat.tools import Caller, ToolBoundary

ASK = "Please do this on your phone: "


@dataclass(frozen=True)
class Step:
    """One call of a trajectory, by the agent or the user."""

    tool: str
    args: dict[str, Any]
    by: Caller = "agent"


def gold_steps(case: Case) -> list[Step]:
    """The case's reference calls as a trajectory."""
    return [Step(c.tool, dict(c.args), c.by) for c in case.reference]


class PlannedUser:
    """Makes the trajectory's user calls, one each time the agent asks; answers with what the tool said."""

    answers_at_once = True

    def __init__(self, boundary: ToolBoundary, steps: Sequence[Step]) -> None:
        self.boundary = boundary
        self.queue = [s for s in steps if s.by == "user"]

    async def reply(self, agent_text: str) -> str | None:
        if agent_text.startswith(ASK) and self.queue:
            step = self.queue.pop(0)
            record = await self.boundary.call(step.tool, step.args, by="user")
            return f"Done: {record.result if record.ok else record.error}"
        return "Thank you."


async def replay(case: Case, domain: Domain, steps: Sequence[Step], says: Sequence[str] = (),
                 seed: int = 1) -> TrialRecord:
    """One trial of ``case`` in which the agent and the user make ``steps`` and the agent says ``says``."""

    async def agent(episode: Episode) -> str:
        for step in steps:
            if step.by == "agent":
                await episode.call(step.tool, step.args)
            else:
                await episode.say(f"{ASK}{step.tool}.")
        for text in says:
            await episode.say(f"To confirm: {text}.")
        return "Is there anything else I can help with?"

    return await run_trial(case, domain, agent, 0, seed,
                           user=lambda _case, _seed, boundary: PlannedUser(boundary, steps))
