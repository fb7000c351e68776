"""Both adapters against the fake server, with the real openai and anthropic SDKs as clients."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from passhat.errors import InfrastructureError, PasshatError
from passhat.llm import CallOptions, ChatMessage, ToolRequest, chat_model
from passhat.llm.retry import RetryPolicy
from passhat.testing.fake_models import FakeModelServer, ToolUse, Turn, scripted
from tests.llm.helpers import FAST

PROVIDERS = ["openai", "anthropic"]


def model(provider: str, server: FakeModelServer, retry: RetryPolicy = FAST) -> Any:
    url = server.openai_url if provider == "openai" else server.anthropic_url
    return chat_model(f"{provider}:scripted-model", base_url=url, retry=retry)


def ask(m: Any, messages: list[ChatMessage] | None = None, **options: Any) -> Any:
    return asyncio.run(m.complete("be helpful", messages or [ChatMessage(role="user", text="hi")], [],
                                  CallOptions(**options)))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_streamed_text_with_usage_and_time_to_first_token(provider: str, serve: Any) -> None:
    server = serve(scripted([Turn(text="Hello there, how can I help?", input_tokens=11, output_tokens=7, delay_s=0.05)]))
    reply = ask(model(provider, server))
    assert reply.text == "Hello there, how can I help?"
    assert (reply.input_tokens, reply.output_tokens) == (11, 7)
    assert reply.time_to_first_token_s is not None and reply.time_to_first_token_s >= 0.05
    assert reply.latency_s >= reply.time_to_first_token_s
    assert server.requests[0].body["stream"] is True


@pytest.mark.parametrize("provider", PROVIDERS)
def test_parallel_tool_calls_come_back_in_order_with_parsed_arguments(provider: str, serve: Any) -> None:
    calls = [ToolUse("list_notes", {}), ToolUse("add_note", {"title": "call mom", "priority": 2})]
    server = serve(scripted([Turn(tool_calls=calls), Turn(text="done")]))
    m = model(provider, server)
    reply = ask(m)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("list_notes", {}),
                                                                 ("add_note", {"title": "call mom", "priority": 2})]
    # the results go back as tool messages, in the provider's own format
    history = [ChatMessage(role="user", text="hi"), ChatMessage(role="assistant", tool_calls=tuple(reply.tool_calls)),
               *(ChatMessage(role="tool", text="[]", tool_call_id=c.id) for c in reply.tool_calls)]
    assert ask(m, history).text == "done"
    sent = server.requests[-1].body["messages"]
    if provider == "openai":
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
        assert sent[2]["tool_calls"][1]["function"]["name"] == "add_note"
    else:
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
        assert [b["type"] for b in sent[2]["content"]] == ["tool_result", "tool_result"]
        assert server.requests[-1].body["system"] == "be helpful"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rate_limits_and_server_errors_are_retried(provider: str, serve: Any) -> None:
    server = serve(scripted([Turn(text="finally", errors=[429, 500])]))
    reply = ask(model(provider, server))
    assert reply.text == "finally" and reply.attempts == 3
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_persistent_5xx_is_an_infrastructure_error_after_bounded_retries(provider: str, serve: Any) -> None:
    server = serve(scripted([Turn(always=500)]))
    with pytest.raises(InfrastructureError, match="still failing after 3 attempts"):
        ask(model(provider, server))
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rejected_credentials_are_not_retried(provider: str, serve: Any) -> None:
    server = serve(scripted([Turn(always=401)]))
    with pytest.raises(InfrastructureError, match="not retried"):
        ask(model(provider, server))
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_bad_request_is_the_agents_own_error(provider: str, serve: Any) -> None:
    server = serve(scripted([Turn(always=400, text="context too long")]))
    with pytest.raises(Exception, match="context too long") as info:
        ask(model(provider, server))
    assert not isinstance(info.value, InfrastructureError)


def test_sampling_settings_are_sent(serve: Any) -> None:
    server = serve(scripted([Turn(text="ok")]))
    ask(model("openai", server), temperature=0.0, seed=42, max_tokens=100)
    body = server.requests[0].body
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 42, 100)
    assert body["stream_options"] == {"include_usage": True}
    server = serve(scripted([Turn(text="ok")]))
    ask(model("anthropic", server), temperature=0.0, max_tokens=100)
    body = server.requests[0].body
    assert (body["temperature"], body["max_tokens"]) == (0.0, 100)


def test_invalid_argument_json_is_passed_on_raw(serve: Any) -> None:
    server = serve(scripted([Turn(tool_calls=[ToolUse("add_note", '{"title": "x"')])]))
    call = ask(model("openai", server)).tool_calls[0]
    assert call == ToolRequest(id=call.id, name="add_note", arguments='{"title": "x"')


def test_a_model_needs_a_key_or_a_base_url() -> None:
    with pytest.raises(PasshatError, match="OPENAI_API_KEY"):
        chat_model("openai:gpt-4.1")
    with pytest.raises(PasshatError, match="ANTHROPIC_API_KEY"):
        chat_model("anthropic:claude-sonnet-4-5")
    with pytest.raises(ValueError, match="PROVIDER:MODEL"):
        chat_model("mistral:large")
