"""Reading traces: malformed records stop with exit 2 naming file:line (or the span) and the field, before
anything is written; OTLP from agent frameworks (chat spans) is read too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main
from passhat.errors import PasshatError
from passhat.redaction import Redactor
from passhat.shadow import load_traces, shadow
from passhat.shadow.traces import ToolTurn

APPROVAL = {"order_id": 4812, "amount": 118.5, "approved_by": "supervisor.lin"}


def line(**fields: Any) -> str:
    base: dict[str, Any] = {"id": "c1", "identity": "C-1001", "turns": [
        {"role": "user", "text": "Please refund my order 4812."},
        {"role": "tool", "name": "get_approval", "arguments": {"order_id": 4812}, "result": APPROVAL},
        {"role": "assistant", "text": "Done."}]}
    return json.dumps({**base, **fields}) + "\n"


def shadow_exit(tmp_path: Path, text: str, *extra: str) -> Any:
    traces = tmp_path / "traces.jsonl"
    traces.write_text(text)
    return CliRunner().invoke(main, ["shadow", str(traces), "--agent", "careful", "--domain", "refunds", "--out",
                                     str(tmp_path / "out"), *extra])


def one_error(r: Any) -> str:
    assert r.exit_code == 2, r.output
    errors = [x for x in r.output.splitlines() if x.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in r.output, r.output
    return errors[0]


@pytest.mark.parametrize(("second", "where", "what"), [
    ("{not json\n", ":2: not valid JSON", "column 2"),
    ('{"id": ' + "9" * 5000 + "}\n", ":2: not valid JSON", "4300 digits"),  # json.loads: ValueError, not a decode error
    (line(id="c2", turns=[{"role": "user", "text": "hi"},
                          {"role": "tool", "name": "get_order", "arguments": '{"order_id": ' + "9" * 5000 + "}"}]),
     ":2: turns.1.arguments:", "a string holding one"),
    ('["a list"]\n', ":2: expected a JSON object", "list"),
    # Python's reader takes these words; a result holding one reached conversations.jsonl as null
    (line(id="c2").replace("118.5", "NaN"), ":2: not valid JSON", "NaN is not a JSON number"),
    (line(id="c2").replace("118.5", "-Infinity"), ":2: not valid JSON", "-Infinity is not a JSON number"),
    (line(id="c2", turns=[{"role": "user", "text": "hi"}, {"role": "tool", "name": "get_order", "arguments": '{"x": NaN}'}]),
     ":2: turns.1.arguments:", "a string holding one"),
    (line(id="c2", turns=[{"role": "bot", "text": "hi"}]), ":2: turns.0.role:",
     "expected one of user, assistant, tool, got 'bot'"),
    (line(id="c2", turns=[{"text": "hi"}]), ":2: turns.0.role:", "missing"),
    (line(id="c2", turns=[{"role": "user", "text": "hi"}, {"role": "tool", "arguments": {}}]), ":2: turns.1.name:",
     "Field required"),
    (line(id="c2", turns=[{"role": "user", "text": "hi"}, {"role": "tool", "name": "get_order", "result": 1, "error": "x"}]),
     ":2: turns.1:", "not both"),
    (line(id="c2", turns=[{"role": "assistant", "text": "Hello?"}]), ":2: turns:", "no user message"),
    (line(id="c2", turns=[{"role": "user", "text": "hi", "at": 3}]), ":2: turns.0.at:", "unknown field"),
    (line(), ":2: id:", "conversation 'c1' is also at"),
    (line(id="c2", turns=[{"role": "user", "text": "hi"}, {"role": "tool", "name": "issue_refund", "arguments": {},
                                                            "error": "x", "error_type": "gone"}]),
     ":2: turns.1.error_type:", "'refused', 'timeout', 'lost_response' or 'unavailable'"),
])
def test_a_malformed_line_names_file_line_and_field(tmp_path: Path, second: str, where: str, what: str) -> None:
    message = one_error(shadow_exit(tmp_path, line() + second))
    assert f"traces.jsonl{where}" in message and what in message, message
    assert not (tmp_path / "out").exists(), "nothing is written before every record is valid"


def test_a_pretty_printed_document_holding_nan_is_refused(tmp_path: Path) -> None:
    text = json.dumps(json.loads(line()), indent=2).replace("118.5", "Infinity")
    message = one_error(shadow_exit(tmp_path, text))
    assert "traces.jsonl:1: not valid JSON (Infinity is not a JSON number)" in message, message


def test_an_unknown_tool_is_named_with_its_place(tmp_path: Path) -> None:
    turns = [{"role": "user", "text": "hi"}, {"role": "tool", "name": "get_order", "arguments": {"order_id": 1}},
             {"role": "tool", "name": "wire_money", "arguments": {}}]
    message = one_error(shadow_exit(tmp_path, line() + line(id="c2", turns=turns)))
    assert "traces.jsonl:2: turns.2.name: unknown tool 'wire_money'; domain 'refunds' has: add_note" in message


def test_a_trace_of_another_domain_is_refused(tmp_path: Path) -> None:
    said = one_error(shadow_exit(tmp_path, line(domain="reimbursement")))
    assert "traces.jsonl:1: domain: the conversation is from domain 'reimbursement', not 'refunds'" in said
    turns = [{"role": "user", "text": "File INV-102"},
             {"role": "tool", "name": "query_invoices", "arguments": {"invoice_id": "INV-102"}, "result": []}]
    unsaid = one_error(shadow_exit(tmp_path, line(turns=turns)))  # no domain field: its tools give it away
    assert "turns.1.name: unknown tool 'query_invoices'" in unsaid and "another domain?" in unsaid


def test_fixtures_are_checked(tmp_path: Path) -> None:
    assert "traces.jsonl:1: fixture: unknown fixture 'staging'" in one_error(shadow_exit(tmp_path, line(fixture="staging")))
    assert "--fixture 'nope'" in one_error(shadow_exit(tmp_path, line(), "--fixture", "nope"))


def test_an_empty_file_and_an_existing_folder_are_bad_input(tmp_path: Path) -> None:
    assert "no conversations" in one_error(shadow_exit(tmp_path, "\n\n"))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    assert "not an empty folder" in one_error(shadow_exit(tmp_path, line()))


def otlp_span(trace: str, span: str, name: str, attrs: dict[str, Any], start: int, error: str | None = None) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v if isinstance(v, str) else json.dumps(v)}

    out = {"traceId": trace, "spanId": span, "name": name, "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 5),
           "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()]}
    if error:
        out["status"] = {"code": 2, "message": error}
    return out


def framework_trace(tool_attrs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A trace as an agent framework emits it: chat spans with the messages so far, execute_tool spans."""
    t = "0af7651916cd43dd8448eb211c80319c"
    first_chat = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": [
        {"role": "system", "parts": [{"type": "text", "content": "You are a support agent."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Refund order 4812 please"}]}]}
    last_chat = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": [
        *first_chat["gen_ai.input.messages"],
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "1", "name": "get_approval", "arguments": {}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "1", "response": "..."}]}],
        "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "It is refunded."}]}]}
    tool = tool_attrs or {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_approval",
                          "gen_ai.tool.call.arguments": {"order_id": 4812}, "gen_ai.tool.call.result": APPROVAL}
    spans = [otlp_span(t, "a1", "chat gpt", first_chat, 10), otlp_span(t, "a2", "execute_tool", tool, 20),
             otlp_span(t, "a3", "execute_tool", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "issue_refund",
                                                 "gen_ai.tool.call.arguments": {"order_id": 4812, "amount": 118.5,
                                                                                "method": "original_payment"},
                                                 "error.type": "timeout"}, 30, error="upstream timed out"),
             otlp_span(t, "a4", "chat gpt", last_chat, 40),
             otlp_span("ffffffffffffffffffffffffffffffff", "b1", "GET /health", {"http.method": "GET"}, 1)]
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "user.id", "value": {"stringValue": "x"}}]},
                               "scopeSpans": [{"scope": {"name": "agents"}, "spans": spans}]}]}


def test_otlp_from_a_framework_reads_chat_messages_and_tool_spans(tmp_path: Path) -> None:
    file = tmp_path / "t.json"
    file.write_text(json.dumps(framework_trace(), indent=2))  # one pretty-printed document
    [rec] = load_traces([file], Redactor())  # the health-check trace has no GenAI span: skipped
    c = rec.conversation
    assert c.id == "0af7651916cd43dd8448eb211c80319c" and c.user_texts == ["Refund order 4812 please"]
    assert c.reply == "It is refunded."
    tools = [t for _, t in c.tool_turns()]
    assert [t.name for t in tools] == ["get_approval", "issue_refund"] and tools[0].result == APPROVAL
    assert tools[1] == ToolTurn(role="tool", name="issue_refund", error="upstream timed out", error_type="timeout",
                                arguments={"order_id": 4812, "amount": 118.5, "method": "original_payment"})


def test_an_otlp_span_without_arguments_is_named(tmp_path: Path) -> None:
    file = tmp_path / "t.jsonl"
    file.write_text(json.dumps(framework_trace({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_order"})))
    with pytest.raises(PasshatError, match=r"t\.jsonl: trace 0af7651916cd43dd8448eb211c80319c: span a2: "
                                        r"gen_ai\.tool\.call\.arguments: missing"):
        load_traces([file], Redactor())


def test_one_format_per_file(tmp_path: Path) -> None:
    file = tmp_path / "t.jsonl"
    file.write_text(line() + json.dumps(framework_trace()) + "\n")
    with pytest.raises(PasshatError, match=r"t\.jsonl:2: an OTLP trace request in a file of conversations"):
        load_traces([file], Redactor())


def test_a_recorded_read_error_is_served_and_a_recorded_write_failure_is_replayed(tmp_path: Path) -> None:
    """The approval read timed out once in production: the candidate sees that timeout, reads again and gets the
    recorded approval (99.00, not the fixture's 118.50); the refund that timed out without taking effect is a
    `timeout` fault for the candidate, which looks, finds nothing, and refunds once."""
    refund = {"order_id": 4812, "amount": 99.0, "method": "original_payment"}
    turns = [{"role": "user", "text": "Hi, please refund my order 4812, it was approved."},
             {"role": "tool", "name": "get_approval", "arguments": {"order_id": 4812}, "error": "timeout: no response",
              "error_type": "timeout"},
             {"role": "tool", "name": "get_approval", "arguments": {"order_id": 4812}, "result": {**APPROVAL, "amount": 99.0}},
             {"role": "tool", "name": "issue_refund", "arguments": refund,
              "error": "timeout: no response from the payment service", "error_type": "timeout"},
             {"role": "tool", "name": "issue_refund", "arguments": refund, "result": {"refund_id": "R-1", **refund}},
             {"role": "assistant", "text": "Refunded 99.00 USD for order 4812."}]
    traces = tmp_path / "t.jsonl"
    traces.write_text(line(turns=turns))
    report = shadow([traces], "careful", domain="refunds", out=tmp_path / "s").report
    [trial] = report.conversations[0].trials
    refunds = [w for w in trial.writes if w.tool == "issue_refund"]
    assert [w.arguments["amount"] for w in refunds] == [99.0]  # the recorded amount, not the fixture's 118.5
    assert trial.same >= 1 and not trial.duplicates and trial.reads_served == 2
    case = (tmp_path / "s" / "cases" / "c1.yaml").read_text()
    assert "kind: timeout" in case and "on_call: 2" not in case


def test_a_candidate_that_does_not_load_leaves_nothing_behind(tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    traces.write_text(line())
    for agent in ("no_such_module_anywhere:agent", "carefull"):
        r = CliRunner().invoke(main, ["shadow", str(traces), "--agent", agent, "--domain", "refunds", "--out",
                                      str(tmp_path / "out")])
        one_error(r)
        assert not (tmp_path / "out").exists()
