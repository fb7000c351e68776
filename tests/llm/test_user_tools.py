"""Dual control with model-played roles: the user model calls its own phone's tools, recorded as the user's calls."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from passhat.agents.model import AgentSettings, ModelAgent
from passhat.cases.suite import load_suite
from passhat.llm import chat_model
from passhat.runner.trial import run_trial
from passhat.tau2_bench.importer import import_tau2_bench
from passhat.testing.fake_models import FakeRequest, ToolUse, Turn
from passhat.users.llm import LLMUserFactory
from tests.llm.helpers import FAST, PRICES

CHECKOUT = Path(__file__).resolve().parents[1] / "data" / "tau2_checkout"


def test_the_user_model_turns_airplane_mode_off_on_its_own_phone(serve: Any, tmp_path: Path) -> None:
    def script(req: FakeRequest) -> Turn:
        if req.model == "user-model":
            if not any(m.get("role") == "tool" for m in req.messages):
                assert [t["function"]["name"] for t in req.body["tools"]] == [
                    "check_status_bar", "toggle_airplane_mode", "toggle_roaming"]
                return Turn(tool_calls=[ToolUse("toggle_airplane_mode", {})])
            return Turn(text="Done, airplane mode is off now.")
        if req.turn == 0:
            assert all(t["function"]["name"] != "toggle_airplane_mode" for t in req.body["tools"])
            return Turn(text="Please turn off airplane mode on your phone.")
        return Turn(text="Great, your service should be back. ###DONE###")

    server = serve(script)
    folder = import_tau2_bench(CHECKOUT, tmp_path, domains=["telecom"]).suites["telecom"]
    suite = load_suite(str(folder / "cases"))
    case = suite.case("telecom-000")
    agent = ModelAgent(chat_model("openai:scripted-model", base_url=server.openai_url, retry=FAST), AgentSettings(), PRICES)
    user = LLMUserFactory(chat_model("openai:user-model", base_url=server.openai_url, retry=FAST), prices=PRICES)
    rec = asyncio.run(run_trial(case, suite.domain_of(case), agent, 0, 1, user=user))
    assert [(c.tool, c.by, c.status) for c in rec.calls] == [("toggle_airplane_mode", "user", "ok")]
    assert rec.outcome == "pass", rec.failed_grades()
    sent = next(r for r in server.requests if r.model == "user-model")
    assert "Your own device" in sent.system
    assert rec.user_usage is not None and rec.user_usage.model_calls == 2
