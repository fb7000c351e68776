"""Tools that end the episode (issue 12, item 2): a hand-off ends the trial; later calls are refused and
recorded, the user is gone, and an agent running elsewhere is stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2

from passhat.agents.external import ExternalAgent
from passhat.cases import load_suite
from passhat.runner.records import TrialRecord
from passhat.runner.trial import run_trial
from passhat.serve import AgentReply, TrialEndpoint

SUITE = load_suite(str(Path(__file__).parents[1] / "data" / "handoff" / "cases"))
CASE = SUITE.cases[0]


def run(agent: Any) -> TrialRecord:
    async def go() -> TrialRecord:
        try:
            return await run_trial(CASE, SUITE.domain_of(CASE), agent, 0, 1)
        finally:
            close = getattr(agent, "aclose", None)
            if close is not None:
                await close()

    return asyncio.run(go())


def test_calls_after_a_hand_off_are_refused_recorded_and_change_nothing() -> None:
    said: dict[str, Any] = {}

    async def agent(episode: Any) -> str:
        await episode.call("get_ticket", {"ticket_id": "T-1"})
        await episode.call("transfer_to_human", {"summary": "legal matter"})
        late = await episode.call("close_ticket", {"ticket_id": "T-1"})  # too late: the human has it
        said["late"], said["user"] = late, await episode.say("Anything else?")
        return "A colleague will contact you."

    rec = run(agent)
    assert [(c.tool, c.status) for c in rec.calls] == [
        ("get_ticket", "ok"), ("transfer_to_human", "ok"), ("close_ticket", "after_end")]
    assert "the conversation has ended (transfer_to_human was called)" in said["late"].error and said["user"] is None
    assert rec.end_reason == "ended_by_tool" and rec.outcome == "pass"  # the ticket stayed open
    assert rec.reply == "A colleague will contact you."


def test_a_hand_off_with_a_lost_answer_still_ends_the_episode() -> None:
    from passhat.tools.faults import Fault

    case = CASE.model_copy(update={"faults": [Fault(tool="transfer_to_human", kind="drop_response")]})

    async def agent(episode: Any) -> None:
        first = await episode.call("transfer_to_human", {"summary": "legal matter"})
        assert first.withheld
        await episode.call("transfer_to_human", {"summary": "legal matter (retry)"})

    rec = asyncio.run(run_trial(case, SUITE.domain_of(case), agent, 0, 1))
    assert [c.status for c in rec.calls] == ["fault", "after_end"]
    assert rec.end_reason == "ended_by_tool" and rec.outcome == "pass"  # one hand-off, not two


class ChattyAfterHandOff(ExternalAgent):
    """An agent elsewhere that keeps going after it handed off: it is stopped."""

    async def run(self, endpoint: TrialEndpoint) -> AgentReply:
        start = endpoint.start()
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {start.token}"}) as http:
            await http.post(f"{start.tools_url}/transfer_to_human", json={"summary": "legal matter"})
            while True:  # never returns on its own
                await http.post(f"{start.tools_url}/get_ticket", json={"ticket_id": "T-1"})
                await asyncio.sleep(0.01)


def test_an_agent_elsewhere_is_stopped_when_it_hands_off() -> None:
    rec = run(ChattyAfterHandOff())
    # stopped at the hand-off, not left to run until its time limit (60 s) ended it: a bound on the order of
    # the limit, not a timing, so a loaded machine does not fail it
    assert rec.end_reason == "ended_by_tool" and rec.timing.agent_s < CASE.limits.max_seconds / 2
    assert rec.calls[0].tool == "transfer_to_human" and all(c.status == "after_end" for c in rec.calls[1:])
