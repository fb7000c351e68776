"""The policy model: a fake chat model that makes the reference agents' decisions, whatever agent drives it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main
from passhat.runner import RunStore
from passhat.testing.fake_models import FakeModelServer, FakeRequest, ToolUse, Turn
from passhat.testing.policy_model import (
    STOP_TOKEN,
    Call,
    Said,
    openai_conversation,
    parse_tool_text,
    policy_model,
)

INSTRUCTION = "Hi, please refund my order 4812, it was approved."
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}}
         for n in ("list_orders", "get_order", "get_approval", "list_refunds", "issue_refund", "list_emails", "send_email")]


def request(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] = TOOLS) -> FakeRequest:
    return FakeRequest("openai", "/v1/chat/completions", {
        "model": model, "tools": tools,
        "messages": [{"role": "system", "content": "policy"}, {"role": "user", "content": INSTRUCTION}, *messages]})


def call(n: int, name: str, args: dict[str, Any], result: str) -> list[dict[str, Any]]:
    """An assistant tool call and its tool message, as a chat-completions history has them."""
    return [{"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": result}]


ORDERS = json.dumps([{"id": 4812, "status": "delivered", "total": 249.0}])
ORDER = json.dumps({"id": 4812, "status": "delivered", "total": 249.0})


# --- tool results as text ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "ok", "content", "error"), [
    ('{"id": 4812}', True, {"id": 4812}, None),
    ("[]", True, [], None),
    ('"sent"', True, "sent", None),  # a string result is a JSON string
    ("ERROR: timeout: no response from get_approval after 30s", False, None, "timeout: no response from get_approval after 30s"),
    ("permission denied: order 4815 is not yours", False, None, "permission denied: order 4815 is not yours"),
    ('{"type": "text", "text": "{\\"id\\": 4812}"}', True, {"id": 4812}, None),  # an MCP text block, as the Agents SDK sends it
    ('[{"type": "text", "text": "no approval on file for order 4813"}]', False, None, "no approval on file for order 4813"),
    ('{"type": "text", "text": "invalid arguments: amount: not a number", "annotations": null}', False, None,
     "invalid arguments: amount: not a number"),
    ("An error occurred while running the tool. Please try again. Error: ERROR: timeout: no response from send_email",
     False, None, "timeout: no response from send_email"),
    ('{"ok": true, "result": {"id": 4812}}', True, {"id": 4812}, None),  # the plain HTTP API's body, passed on as is
    ('{"ok": false, "error": "error: mail service unavailable (503)"}', False, None, "error: mail service unavailable (503)"),
    ('{"error":"ERROR: error: mail service unavailable (503)"}', False, None, "mail service unavailable (503)"),  # Pydantic AI
    ('{"error": "Timed out while waiting for response"}', False, None, "Timed out while waiting for response"),
])
def test_tool_results_are_read_back_in_every_form_agents_send_them(text: str, ok: bool, content: Any, error: str | None) -> None:
    result = parse_tool_text(text)
    assert (result.ok, result.content, result.error) == (ok, content, error)


def test_the_conversation_is_rebuilt_as_calls_and_turns_with_the_user() -> None:
    req = request("careful", [
        *call(1, "list_orders", {}, ORDERS),
        {"role": "assistant", "content": "Which order?"}, {"role": "user", "content": "4812"},
        *call(2, "send_message_to_user", {"text": "Anything else?"}, "(the user has left the conversation and will not reply)"),
    ])
    conv = openai_conversation(req.body)
    assert conv.instruction == INSTRUCTION
    assert conv.events == [Call("list_orders", {}, parse_tool_text(ORDERS)), Said("Which order?", "4812"),
                           Said("Anything else?", None)]


# --- deciding the next turn ---------------------------------------------------------------------------------


def test_each_answer_is_the_playbooks_next_step() -> None:
    script = policy_model()
    assert script(request("careful", [])) == Turn(tool_calls=[ToolUse("list_orders", {})])
    assert script(request("policy-careful", call(1, "list_orders", {}, ORDERS))) == \
        Turn(tool_calls=[ToolUse("get_order", {"order_id": 4812})])
    # hasty skips the ownership check: its first step is the approval
    assert script(request("hasty", [])) == Turn(tool_calls=[ToolUse("get_approval", {"order_id": 4812})])


def test_a_timeout_and_an_error_lead_to_different_decisions() -> None:
    """The playbook reads the error text: a timeout is retried (the read is safe), a refusal escalates."""
    script = policy_model()
    before = [*call(1, "list_orders", {}, ORDERS), *call(2, "get_order", {"order_id": 4812}, ORDER)]
    timed_out = script(request("careful", [*before, *call(3, "get_approval", {"order_id": 4812},
                                                            "ERROR: timeout: no response from get_approval after 30s")]))
    assert timed_out == Turn(tool_calls=[ToolUse("get_approval", {"order_id": 4812})])
    refused = script(request("careful", [*before, *call(3, "get_approval", {"order_id": 4812}, "no approval on file")]))
    assert refused.tool_calls[0].name == "escalate_to_human"


def test_questions_go_to_the_user_as_text_or_through_the_mcp_user_tool() -> None:
    script = policy_model(domain="refunds")
    vague = {"role": "user", "content": "Hello, my refund was approved. Can you process it please?"}

    def ask(tools: list[dict[str, Any]]) -> Turn:
        req = request("careful", [], tools)
        req.body["messages"][1] = vague
        return script(req)

    assert ask(TOOLS) == Turn(text="Which order number is the refund for?")
    user_tool = {"type": "function", "function": {"name": "send_message_to_user", "parameters": {}}}
    assert ask([*TOOLS, user_tool]) == Turn(tool_calls=[
        ToolUse("send_message_to_user", {"text": "Which order number is the refund for?"})])


def test_the_final_reply_ends_with_the_stop_token() -> None:
    script = policy_model()
    gone = request("careful", [{"role": "assistant", "content": "Which order number is the refund for?"}])
    gone.body["messages"][1] = {"role": "user", "content": "I want a refund."}
    gone.body["messages"].append({"role": "user", "content": "I don't know"})
    # three questions without an order number, then the playbook gives up with its final reply
    for question in ("Could you tell me the order number once you have it?",
                     "I still need the order number (four digits, from your confirmation email). What is it?"):
        assert script(gone).text == question
        gone.body["messages"] += [{"role": "assistant", "content": question}, {"role": "user", "content": "no idea"}]
    final = script(gone)
    assert final.text.endswith(STOP_TOKEN) and "order number" in final.text and not final.tool_calls


@pytest.mark.parametrize(("model", "messages", "reason"), [
    ("gpt-4o", [], "plays careful or hasty"),
    ("flaky", [], "needs the trial seed"),
    ("careful", call(1, "issue_refund", {"order_id": 4812, "amount": 249.0, "method": "card"}, "{}"),
     "the playbook calls list_orders {}, the conversation has a call of issue_refund"),
    ("careful", [*call(1, "list_orders", {}, ORDERS), *call(2, "get_order", {"order_id": 9999}, ORDER)],
     'step 2: the playbook calls get_order {"order_id": 4812}'),
])
def test_a_request_it_cannot_answer_gets_400_with_the_reason(model: str, messages: list[dict[str, Any]], reason: str) -> None:
    turn = policy_model()(request(model, messages))
    assert turn.always == 400 and reason in turn.text


def test_the_domain_is_recognised_from_the_tools_offered() -> None:
    turn = policy_model()(request("careful", [], [{"type": "function", "function": {"name": "search_web"}}]))
    assert turn.always == 400 and "cannot tell the domain" in turn.text


# --- through a real model-driven agent: the in-process openai:/anthropic: agents ------------------------------


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeModelServer]:
    with FakeModelServer(policy_model()) as server:
        yield server


def run(tmp_path: Path, suite: str, agent: str, *extra: str) -> dict[str, Any]:
    out = tmp_path / agent.replace(":", "-")
    result = CliRunner().invoke(main, ["run", suite, "--agent", agent, "-k", "1", "-j", "4", "--out", str(out), "-q", *extra])
    assert result.exit_code == 0, result.output
    return {r.case_id: r for r in RunStore(out).load()}


def decisions(records: dict[str, Any]) -> dict[str, Any]:
    """Per case: verdict, failure category, every tool call (name, arguments, status), the conversation, the reply."""
    return {case: (r.outcome, r.failure.category if r.failure else None,
                   [(c.tool, c.arguments, c.status) for c in r.calls], [m.text for m in r.messages], r.reply)
            for case, r in records.items()}


@pytest.mark.parametrize("suite", ["refunds", "reimbursement"])
@pytest.mark.parametrize("style", ["careful", "hasty"])
def test_a_model_driven_agent_on_the_policy_model_makes_the_reference_agents_decisions(
        tmp_path: Path, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch, suite: str, style: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    reference = decisions(run(tmp_path, suite, style))
    assert decisions(run(tmp_path, suite, f"openai:{style}", "--base-url", fake_model.openai_url)) == reference
    outcomes = {o for o, *_ in reference.values()}
    assert outcomes == ({"pass"} if style == "careful" else {"pass", "fail"})


def test_the_anthropic_wire_format_too(tmp_path: Path, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-used")
    reference = decisions(run(tmp_path, "refunds", "hasty"))
    assert decisions(run(tmp_path, "refunds", "anthropic:hasty", "--base-url", fake_model.anthropic_url)) == reference
