"""Prices, backoff, message translation and the fake server's non-streamed answers."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from passhat.errors import PasshatError
from passhat.llm import ChatMessage, Price, PriceTable, ToolRequest, load_price_table
from passhat.llm.anthropic_chat import to_anthropic_messages
from passhat.llm.chat import fit_to_signature
from passhat.llm.retry import RetryPolicy, classify_status
from passhat.testing.fake_models import ToolUse, Turn, scripted


def test_prices_extend_by_file_and_env_and_match_dated_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = PriceTable()
    assert table.price("claude-sonnet-4-5-20250929") == table.prices["claude-sonnet-4"]  # longest listed prefix
    assert table.price("gpt-4o-mini-2024-07-18") == table.prices["gpt-4o-mini"]
    assert table.price("my-local-llama") is None and table.cost("my-local-llama", 10**6, 10**6) == 0.0
    (tmp_path / "env.json").write_text('{"my-local-llama": {"input": 0.1, "output": 0.2}}')
    (tmp_path / "file.yaml").write_text("my-local-llama: {input: 1, output: 2}\ngpt-4o: {input: 0, output: 0}\n")
    monkeypatch.setenv("PASSHAT_PRICES", str(tmp_path / "env.json"))
    assert load_price_table().price("my-local-llama") == Price(0.1, 0.2)
    table = load_price_table(tmp_path / "file.yaml")  # the file wins over the environment
    assert table.price("my-local-llama") == Price(1.0, 2.0) and table.cost("gpt-4o", 5, 5) == 0.0
    assert table.cost("my-local-llama", 1_000_000, 500_000) == pytest.approx(2.0)
    assert table.describe(["my-local-llama", "nope"]) == {
        "my-local-llama": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}, "nope": None}


LEVELS = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f"), ("f", "g")]
"""A "billion laughs" of 7 levels: 21 lines that expand to 11 million nodes."""


@pytest.mark.parametrize("text, message", [
    ("- a\n- b\n", "a price table maps model names"),
    ("m: {input: cheap}\n", "prices must be numbers"),
    ("m: {inputs: 1}\n", "expected {input: USD per Mtok"),
    ("m: {input: .nan, output: 1}\n", r"p\.yaml: m\.input: prices must be numbers, finite and ≥ 0 .*got nan"),
    ("m: {input: 1, output: .inf}\n", r"m\.output: .*got inf"),
    ("m: {input: -0.5, output: 1}\n", r"m\.input: .*got -0\.5"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in LEVELS),
     "alias bomb"),
])
def test_bad_price_files_say_what_is_expected(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(PasshatError, match=message):
        load_price_table(path)


def test_backoff_doubles_honours_retry_after_and_is_capped() -> None:
    policy, rng = RetryPolicy(base_delay_s=1.0, max_delay_s=10.0, jitter=0.0), random.Random(0)
    assert [policy.delay(n, None, rng) for n in (1, 2, 3, 5)] == [1.0, 2.0, 4.0, 10.0]
    assert policy.delay(1, 7.0, rng) == 7.0 and policy.delay(1, 60.0, rng) == 10.0
    jittered = RetryPolicy(base_delay_s=1.0, jitter=0.25)
    assert all(0.75 <= jittered.delay(1, None, rng) <= 1.25 for _ in range(50))
    assert [classify_status(s) for s in (None, 200, 408, 429, 500, 529, 401, 404, 400, 422)] == [
        "retry", "retry", "retry", "retry", "retry", "retry", "infrastructure", "infrastructure", "agent", "agent"]


def test_anthropic_messages_alternate_and_start_with_the_user() -> None:
    call = ToolRequest("t1", "list_notes", {})
    messages = to_anthropic_messages([
        ChatMessage(role="assistant", text="I want to add a note."),  # the LLM user's opening line
        ChatMessage(role="user", text="Sure, which title?"),
        ChatMessage(role="assistant", text="", tool_calls=(call,)),
        ChatMessage(role="tool", text="[]", tool_call_id="t1", is_error=False),
        ChatMessage(role="user", text="anything else?"),
    ])
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["type"] for b in messages[4]["content"]] == ["tool_result", "text"]
    assert messages[3]["content"] == [{"type": "tool_use", "id": "t1", "name": "list_notes", "input": {}}]


def test_unknown_sdk_arguments_travel_in_the_request_body() -> None:
    def create(*, model: str, messages: list[Any], extra_body: Any = None) -> None: ...

    assert fit_to_signature(create, {"model": "m", "messages": [], "temperature": 0}) == {
        "model": "m", "messages": [], "extra_body": {"temperature": 0}}


def test_fake_server_answers_without_streaming_too(serve: Any) -> None:
    import anthropic
    import openai

    server = serve(scripted([Turn(text="hi", tool_calls=[ToolUse("list_notes", {})], input_tokens=3, output_tokens=4)]))
    o = openai.OpenAI(api_key="x", base_url=server.openai_url, max_retries=0)
    reply = o.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    assert reply.choices[0].message.content == "hi" and reply.choices[0].message.tool_calls[0].function.name == "list_notes"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (3, 4)
    a = anthropic.Anthropic(api_key="x", base_url=server.anthropic_url, max_retries=0)
    message = a.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "q"}])
    assert [b.type for b in message.content] == ["text", "tool_use"] and message.usage.output_tokens == 4
