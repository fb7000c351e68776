"""The model-driven agent loop on the notes test domain: tools through the episode, user turns, endings."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from passhat.agents.model import AgentSettings, ModelAgent
from passhat.cases import load_suite
from passhat.errors import InfrastructureError
from passhat.llm import chat_model
from passhat.runner import RunConfig, RunStore, execute
from passhat.testing.fake_models import FakeModelServer, ToolUse, Turn, scripted
from tests.llm.helpers import FAST, PRICES, notes_case, run_one

ADD = ToolUse("add_note", {"title": "call mom", "priority": 2})


def agent(server: FakeModelServer, provider: str = "openai", **settings: Any) -> ModelAgent:
    url = server.openai_url if provider == "openai" else server.anthropic_url
    return ModelAgent(chat_model(f"{provider}:scripted-model", base_url=url, retry=FAST), AgentSettings(**settings), PRICES)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_parallel_tool_calls_go_through_the_episode_and_usage_is_recorded(provider: str, serve: Any, tmp_path: Path) -> None:
    server = serve(scripted([
        Turn(tool_calls=[ToolUse("list_notes", {}), ADD], input_tokens=100, output_tokens=20, delay_s=0.02),
        Turn(text="I added the note. ###DONE###", input_tokens=150, output_tokens=10),
    ]))
    rec = run_one(notes_case(tmp_path), agent(server, provider))
    assert rec.outcome == "pass", rec.failed_grades()
    assert [(c.tool, c.status) for c in rec.calls] == [("list_notes", "ok"), ("add_note", "ok")]
    assert rec.end_reason == "completed" and rec.reply == "I added the note."
    assert (rec.usage.input_tokens, rec.usage.output_tokens, rec.usage.model_calls) == (250, 30, 2)
    assert rec.usage.cost == pytest.approx((250 * 1.0 + 30 * 2.0) / 1e6)
    assert rec.usage.time_to_first_token_s is not None and rec.usage.time_to_first_token_s >= 0.02
    assert [m.latency_s is not None and m.latency_s > 0 for m in rec.model_calls] == [True, True]
    # the tool results went back to the model
    assert '"id": "N-' in server.requests[1].prompt


def test_policy_is_the_system_prompt_and_instruction_the_first_user_message(serve: Any, tmp_path: Path) -> None:
    server = serve(scripted([Turn(text="ok ###DONE###")]))
    run_one(notes_case(tmp_path), agent(server))
    messages = server.requests[0].body["messages"]
    assert messages[0]["role"] == "system" and "Never wipe the audit log." in messages[0]["content"]
    assert messages[1] == {"role": "user", "content": "Add a note titled 'call mom' with priority 2."}
    assert server.requests[0].body["seed"] is not None
    assert server.requests[0].body["tools"][0]["function"]["name"] == "list_notes"


def test_text_goes_to_the_user_and_the_answer_comes_back(serve: Any, tmp_path: Path) -> None:
    server = serve(scripted([
        Turn(text="What body should the note have?"),
        Turn(tool_calls=[ToolUse("add_note", {"title": "call mom", "priority": 2, "body": "about the weekend"})]),
        Turn(text="I added it. ###DONE###"),
    ]))
    rec = run_one(notes_case(tmp_path), agent(server))
    assert rec.outcome == "pass", rec.failed_grades()
    assert [m.role for m in rec.messages] == ["user", "agent", "user", "agent"]
    assert server.requests[1].last_user_text == "body: about the weekend"


def test_the_loop_ends_when_the_user_leaves(serve: Any, tmp_path: Path) -> None:
    server = serve(scripted([Turn(text="Let me think about it.")]))
    rec = run_one(notes_case(tmp_path), agent(server))
    assert rec.end_reason == "user_stopped" and len(server.requests) == 1


def test_malformed_arguments_are_recorded_not_guessed(serve: Any, tmp_path: Path) -> None:
    server = serve(scripted([Turn(tool_calls=[ToolUse("add_note", '{"title": "call mom"')]), Turn(text="sorry ###DONE###")]))
    rec = run_one(notes_case(tmp_path), agent(server))
    assert rec.calls[0].status == "invalid_arguments" and rec.outcome == "fail"


def test_model_call_budget_ends_the_trial_as_a_step_limit(serve: Any, tmp_path: Path) -> None:
    server = serve(lambda req: Turn(tool_calls=[ToolUse("get_note", {"note_id": f"N-{req.turn}"})]))
    rec = run_one(notes_case(tmp_path), agent(server, max_model_calls=2))
    assert rec.end_reason == "step_limit" and len(server.requests) == 2


def test_cost_budget_stops_the_agent(serve: Any, tmp_path: Path) -> None:
    server = serve(scripted([Turn(tool_calls=[ADD], input_tokens=1_000_000)]))
    rec = run_one(notes_case(tmp_path, limits={"max_cost": 0.5}), agent(server))
    assert rec.end_reason == "cost_limit" and rec.outcome == "fail"


def test_persistent_server_errors_make_the_trial_an_error_not_a_fail(serve: Any, tmp_path: Path) -> None:
    server = serve(scripted([Turn(always=500)]))
    with pytest.raises(InfrastructureError):
        run_one(notes_case(tmp_path), agent(server))
    cfg = RunConfig(suite=load_suite(str(notes_case(tmp_path))), agent=agent(server), agent_spec="openai:scripted-model",
                    trials=1, out=tmp_path / "run")
    rec = RunStore(asyncio.run(execute(cfg)).folder).load()[0]
    assert (rec.outcome, rec.end_reason, rec.attempt) == ("error", "harness_error", 2)
    assert "InfrastructureError" in (rec.error or "") and "still failing after 3 attempts" in (rec.error or "")
    assert len(server.requests) == 3 * 2 + 3  # three attempts per call; the runner retried the trial once
