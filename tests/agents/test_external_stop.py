"""An external agent runs in its trial's task: a budget that runs out stops it there, the time limit and the
run's own cancellation still reach it, and its clean-up runs before the trial is graded (agents/external.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from passhat.agents.external import ExternalAgent
from passhat.cases import load_suite
from passhat.domain import load_domain
from passhat.runner.records import TrialRecord
from passhat.runner.trial import run_trial
from passhat.serve import AgentReply, ToolServer, TrialEndpoint

NOTES = Path(__file__).parents[1] / "data" / "notes"
CASE = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))


class Scripted(ExternalAgent):
    """Calls ``add_note`` ``calls`` times through the episode's endpoint, then waits ``wait_s`` (None: for ever)
    and answers; notes whether its clean-up ran."""

    def __init__(self, calls: int, wait_s: float | None) -> None:
        super().__init__(server=ToolServer(mcp=False))
        self.calls, self.wait_s = calls, wait_s
        self.cleaned: list[str] = []

    async def run(self, endpoint: TrialEndpoint) -> AgentReply:
        try:
            for _ in range(self.calls):
                await endpoint.call("add_note", {"title": "call mom"})
            if self.wait_s is None:
                await asyncio.Event().wait()
            else:
                await asyncio.sleep(self.wait_s)
            return AgentReply(reply="added")
        finally:
            self.cleaned.append("done")


def trial(tmp_path: Path, agent: Scripted, extra: str = "") -> TrialRecord:
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    (folder / "c.yaml").write_text(CASE + extra)
    case = load_suite(str(folder)).cases[0]

    async def go() -> tuple[TrialRecord, int]:
        try:
            record = await run_trial(case, load_domain(str(NOTES / "domain.py")), agent, 0, 1)
        finally:
            await agent.aclose()
        task = asyncio.current_task()
        assert task is not None
        return record, task.cancelling()

    record, cancelling = asyncio.run(go())
    assert cancelling == 0  # every cancellation asked for was taken back by whoever asked
    return record


def test_a_budget_that_runs_out_stops_the_waiting_agent_in_its_task_and_its_clean_up_runs(tmp_path: Path) -> None:
    agent = Scripted(calls=3, wait_s=None)  # the third call is past max_steps 2; then it would wait for ever
    record = trial(tmp_path, agent, "limits: {max_steps: 2, max_seconds: 30}\n")
    assert record.end_reason == "step_limit" and agent.cleaned == ["done"]


def test_the_time_limit_still_ends_an_external_agent(tmp_path: Path) -> None:
    agent = Scripted(calls=1, wait_s=None)
    record = trial(tmp_path, agent, "limits: {max_seconds: 0.3}\n")
    assert record.end_reason == "time_limit" and agent.cleaned == ["done"]


def test_an_agent_that_answers_is_not_stopped_later(tmp_path: Path) -> None:
    agent = Scripted(calls=1, wait_s=0.01)
    record = trial(tmp_path, agent, "limits: {max_seconds: 30}\n")
    assert record.end_reason == "completed" and record.reply == "added" and agent.cleaned == ["done"]


def test_the_runs_cancellation_is_not_taken_for_a_budget(tmp_path: Path) -> None:
    """Cancelling the trial (Ctrl-C) while the agent waits propagates: it is not mistaken for the budget's stop."""
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "c.yaml").write_text(CASE + "limits: {max_seconds: 30}\n")
    case = load_suite(str(folder)).cases[0]
    agent = Scripted(calls=1, wait_s=None)

    async def go() -> Any:
        task = asyncio.ensure_future(run_trial(case, load_domain(str(NOTES / "domain.py")), agent, 0, 1))
        while not agent.server.router.open:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            return "cancelled"
        finally:
            await agent.aclose()

    assert asyncio.run(go()) == "cancelled" and agent.cleaned == ["done"]
