"""The model-played user: structured instructions, pinned settings, and no leaving before the write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from passhat.agents.model import AgentSettings, ModelAgent
from passhat.cli import main
from passhat.llm import chat_model
from passhat.runner import RunStore
from passhat.testing.fake_models import FakeModelServer, FakeRequest, ToolUse, Turn
from passhat.users.llm import NUDGE, USER_STOP, LLMUserFactory
from tests.llm.helpers import FAST, PRICES, notes_case, run_one

ADD = ToolUse("add_note", {"title": "call mom", "priority": 2, "body": "about the weekend"})


def two_roles(agent_turns: list[Turn], user: Any) -> Any:
    """One server playing the agent's model (scripted turns) and the user's model (``user(req)``)."""

    def script(req: FakeRequest) -> Turn:
        if req.model == "user-model":
            return user(req)
        return agent_turns[min(req.turn, len(agent_turns) - 1)]

    return script


def setup(server: FakeModelServer, **agent_settings: Any) -> tuple[ModelAgent, LLMUserFactory]:
    agent = ModelAgent(chat_model("openai:scripted-model", base_url=server.openai_url, retry=FAST),
                       AgentSettings(**agent_settings), PRICES)
    user = LLMUserFactory(chat_model("openai:user-model", base_url=server.openai_url, retry=FAST), prices=PRICES)
    return agent, user


def test_structured_instructions_and_pinned_settings(serve: Any, tmp_path: Path) -> None:
    server = serve(two_roles([Turn(text="What should the body say?"), Turn(tool_calls=[ADD]), Turn(text="Added. ###DONE###")],
                             lambda req: Turn(text="It's about the weekend.")))
    agent, user = setup(server)
    rec = run_one(notes_case(tmp_path), agent, user=user)
    assert rec.outcome == "pass", rec.failed_grades()
    sent = next(r for r in server.requests if r.model == "user-model")
    system = sent.body["messages"][0]["content"]
    for part in ("Why you are contacting", "Add a note titled 'call mom'", "What you know", "body: \"about the weekend\"",
                 "What you do not know", "When to stop", USER_STOP):
        assert part in system
    assert sent.body["messages"][1] == {"role": "assistant", "content": "Add a note titled 'call mom' with priority 2."}
    assert sent.body["temperature"] == 0.0 and isinstance(sent.body["seed"], int)
    assert rec.messages[2].text == "It's about the weekend."
    assert rec.user_usage is not None and rec.user_usage.model_calls == 1 and rec.user_usage.cost > 0
    assert rec.usage.cost > 0 and rec.user_usage.models == ["user-model"]


def test_the_user_never_leaves_before_the_required_write(serve: Any, tmp_path: Path) -> None:
    server = serve(two_roles(
        [Turn(text="Is there anything else?"), Turn(tool_calls=[ADD]), Turn(text="Done, I added it. Anything else?")],
        lambda req: Turn(text=f"Thanks! {USER_STOP}"),  # a user model that always wants to leave
    ))
    agent, user = setup(server)
    rec = run_one(notes_case(tmp_path), agent, user=user)
    assert [m.text for m in rec.messages if m.role == "user"][1] == NUDGE
    assert rec.end_reason == "user_stopped" and [c.tool for c in rec.calls] == ["add_note"]


def test_without_a_required_write_the_user_may_leave(serve: Any, tmp_path: Path) -> None:
    server = serve(two_roles([Turn(text="I cannot do that, sorry.")], lambda req: Turn(text=USER_STOP)))
    agent, user = setup(server)
    rec = run_one(notes_case(tmp_path, required_tools=[]), agent, user=user)
    assert rec.end_reason == "user_stopped" and [m.role for m in rec.messages] == ["user", "agent"]


def test_run_with_a_model_user_records_it_and_counts_its_cost_apart(serve: Any, tmp_path: Path, prices_file: Path) -> None:
    server = serve(two_roles([Turn(text="Which body?"), Turn(tool_calls=[ADD]), Turn(text="I added it. ###DONE###")],
                             lambda req: Turn(text="about the weekend")))
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [
        "run", str(notes_case(tmp_path)), "--agent", "openai:scripted-model", "--user", "openai:user-model",
        "--base-url", server.openai_url, "-k", "2", "--prices", str(prices_file), "--out", str(out), "-q",
    ])
    assert result.exit_code == 0, result.output
    records = RunStore(out).load()
    assert all(r.outcome == "pass" and r.user_usage and r.user_usage.cost > 0 for r in records)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["models"]["user"]["model"] == "user-model" and manifest["models"]["user"]["temperature"] == 0.0
    experience = json.loads((out / "summary.json").read_text())["suite"]["experience"]
    by_role = experience["cost_by_role"]
    assert by_role["user"] == sum(r.user_usage.cost for r in records if r.user_usage) > 0
    assert experience["total_cost"] == by_role["agent"] + by_role["user"] + by_role["judge"]
    assert experience["cost_per_success_by_role"]["user"] == by_role["user"] / 2


def test_a_user_model_outage_is_an_infrastructure_error(serve: Any, tmp_path: Path) -> None:
    import pytest

    from passhat.errors import InfrastructureError

    server = serve(two_roles([Turn(text="Which body?")], lambda req: Turn(always=503)))
    agent, user = setup(server)
    with pytest.raises(InfrastructureError, match="openai:user-model"):
        run_one(notes_case(tmp_path), agent, user=user)
