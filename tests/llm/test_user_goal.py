"""The model-played user is briefed with the hidden goal; the agent's model never sees it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from passhat.agents.model import AgentSettings, ModelAgent
from passhat.cases.model import DEFAULT_OPENER, UserSpec
from passhat.llm import chat_model
from passhat.testing.fake_models import FakeRequest, ToolUse, Turn
from passhat.users.llm import LLMUserFactory, UserSettings, user_instructions
from tests.llm.helpers import FAST, PRICES, notes_case, run_one

GOAL = "Add a note titled 'call mom' with priority 2 (brief 5e1d)."
AGENT = [Turn(text="Hello! How can I help you?"),
         Turn(tool_calls=[ToolUse("add_note", {"title": "call mom", "priority": 2})]), Turn(text="Added. ###DONE###")]


def script(req: FakeRequest) -> Turn:
    """One server playing the agent's model (``AGENT`` in turn) and the user's model."""
    if req.model == "user-model":
        return Turn(text="I'd like a note to call my mom, priority 2.")
    return AGENT[min(req.turn, len(AGENT) - 1)]


def test_the_user_model_gets_the_goal_and_is_told_to_reveal_it_gradually(serve: Any, tmp_path: Path) -> None:
    server = serve(script)
    agent = ModelAgent(chat_model("openai:scripted-model", base_url=server.openai_url, retry=FAST), AgentSettings(), PRICES)
    user = LLMUserFactory(chat_model("openai:user-model", base_url=server.openai_url, retry=FAST), prices=PRICES)
    folder = notes_case(tmp_path, instruction=None, user={"identity": "alice", "goal": GOAL,
                                                         "facts": {"body": "about the weekend"}})
    rec = run_one(folder, agent, user=user)
    assert rec.outcome == "pass", rec.failed_grades()
    system = next(r for r in server.requests if r.model == "user-model").body["messages"][0]["content"]
    assert GOAL in system and "What you want (private)" in system and "do not give it all away at once" in system
    assert DEFAULT_OPENER in system
    agent_side = [json.dumps(r.body) for r in server.requests if r.model != "user-model"]
    assert agent_side and all("5e1d" not in body for body in agent_side)
    assert all(DEFAULT_OPENER in body for body in agent_side)


def test_without_a_goal_the_prompt_has_no_goal_section() -> None:
    spec = UserSpec(facts={"body": "x"})
    prompt = user_instructions(spec, "Add a note.", UserSettings())
    assert "What you want" not in prompt and "Add a note.\n\n# Who you are" in prompt


def test_a_template_that_would_drop_the_goal_is_refused() -> None:
    settings = UserSettings(template="You are a user. You said: {instruction}. Stop with {stop_token}.")
    assert "Add a note." in user_instructions(UserSpec(), "Add a note.", settings)
    with pytest.raises(ValueError, match="no {goal} placeholder"):
        user_instructions(UserSpec(goal=GOAL), "Add a note.", settings)
