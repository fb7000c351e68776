"""What real production traces and real users throw at ``passhat shadow``: odd and hostile input, personal data in
every field, two different values behind one placeholder, candidates that crash, hang, call unknown tools or
cannot run, flaky candidates over several trials, and promotions that cannot or must not happen."""

from __future__ import annotations

import gzip
import hashlib
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from passhat.cli import main
from passhat.errors import PasshatError
from passhat.models import ShadowReport
from passhat.redaction import Redactor
from passhat.shadow import load_traces, promote, shadow
from passhat.shadow.cases import Call
from passhat.shadow.divergence import compare_writes
from passhat.validation import load_yaml
from tests.shadow.conftest import Traffic

EMAIL, PHONE, CARD = "jane.doe@corp.example", "+1 415 555 2671", "4111 1111 1111 1111"
SECRETS = (EMAIL, PHONE, CARD, "4111111111111111", "14155552671", "13800138000", "jane.doe", "corp.example")
APPROVAL = {"order_id": 4812, "amount": 118.5, "approved_by": "supervisor.lin"}
REFUND = {"order_id": 4812, "amount": 118.5, "method": "original_payment"}


def conversation(cid: str = "c1", **fields: Any) -> dict[str, Any]:
    return {"id": cid, "identity": "C-1001", "turns": [
        {"role": "user", "text": "Please refund my order 4812, it was approved."},
        {"role": "tool", "name": "get_approval", "arguments": {"order_id": 4812}, "result": APPROVAL},
        {"role": "assistant", "text": "Done."}], **fields}


def jsonl(path: Path, *conversations: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in conversations), "utf-8")
    return path


def invoke(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def error_line(r: Result) -> str:
    """The one ``error:`` line of an exit-2 run (no traceback, no passhat bug)."""
    assert r.exit_code == 2, r.output
    errors = [x for x in r.output.splitlines() if x.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in r.output and "passhat bug" not in r.output, r.output
    return errors[0]


def agent_file(tmp_path: Path, body: str) -> str:
    """A candidate agent module; returns its spec (``path.py:agent``)."""
    path = tmp_path / "candidate.py"
    path.write_text("import asyncio\nfrom passhat.agents.reference.refunds import play\n"
                    "from passhat.errors import InfrastructureError\n\n" + body)
    return f"{path}:agent"


# ---------------------------------------------------------------- odd and hostile input


def test_an_empty_file_and_a_missing_domain_are_bad_input_and_write_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert "no conversations" in error_line(invoke("shadow", empty, "--agent", "careful", "--domain", "refunds",
                                                   "--out", tmp_path / "out"))
    traces = jsonl(tmp_path / "t.jsonl", conversation())
    said = error_line(invoke("shadow", traces, "--agent", "careful", "--domain", "no_such_domain", "--out", tmp_path / "out"))
    assert "unknown domain 'no_such_domain'" in said and "refunds" in said
    assert not (tmp_path / "out").exists()


def test_arguments_as_a_json_string_are_read_as_the_object(tmp_path: Path) -> None:
    """OpenAI's API logs a tool call's arguments as JSON text: read as the object they hold, before redaction, so
    a card number in a JSON number is redacted without breaking the JSON."""
    turns = [{"role": "user", "text": "Refund order 4812."},
             {"role": "tool", "name": "get_approval", "arguments": '{"order_id": 4812}', "result": APPROVAL},
             {"role": "tool", "name": "get_customer", "arguments": "", "result": {"id": "C-1001"}},
             {"role": "tool", "name": "add_note", "arguments": '{"order_id": 4812, "body": 4111111111111111}',
              "result": {"note_id": "N-1"}}]
    [rec] = load_traces([jsonl(tmp_path / "t.jsonl", conversation(turns=turns))], Redactor())
    calls = [t for _, t in rec.conversation.tool_turns()]
    assert [t.arguments for t in calls] == [{"order_id": 4812}, {}, {"order_id": 4812, "body": "[REDACTED:card]"}]

    not_an_object = [turns[0], {**turns[1], "arguments": f'["{EMAIL}"]'}]
    r = invoke("shadow", jsonl(tmp_path / "bad.jsonl", conversation(turns=not_an_object)), "--agent", "careful",
               "--domain", "refunds", "--out", tmp_path / "out")
    said = error_line(r)
    assert "bad.jsonl:1: turns.1.arguments: expected a JSON object, or a string holding one" in said
    assert not any(s in r.output for s in SECRETS)


def test_gzip_traces_are_read_and_the_report_names_each_files_sha256(tmp_path: Path) -> None:
    plain = jsonl(tmp_path / "a.jsonl", conversation("c1"))
    packed = tmp_path / "b.jsonl.gz"
    packed.write_bytes(gzip.compress((json.dumps(conversation("c2")) + "\n").encode()))
    report = shadow([plain, packed], "careful", domain="refunds", out=tmp_path / "s").report
    assert [c.id for c in report.conversations] == ["c1", "c2"]
    assert [(f.path, f.sha256, f.conversations) for f in report.trace_files] == [
        (str(p), hashlib.sha256(p.read_bytes()).hexdigest(), 1) for p in (plain, packed)]

    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed.read_bytes()[:-12])
    said = error_line(invoke("shadow", cut, "--agent", "careful", "--domain", "refunds", "--out", tmp_path / "x"))
    assert "cut.jsonl.gz: not a readable gzip file" in said
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(conversation()).encode() + b"\n" + "{\"id\": \"é\"}".encode("latin-1"))
    assert "latin.jsonl: not UTF-8 text" in error_line(invoke("shadow", latin, "--agent", "careful", "--domain",
                                                             "refunds", "--out", tmp_path / "x"))


def test_a_pretty_printed_document_with_a_mistake_names_its_line(tmp_path: Path) -> None:
    text = json.dumps(conversation(), indent=2).replace('"Done."', '"Done.",')  # a trailing comma
    file = tmp_path / "one.json"
    file.write_text("\n" + text)
    line = 1 + next(i for i, x in enumerate(text.splitlines(), start=1) if '"Done.",' in x) + 1
    assert f"one.json:{line}: not valid JSON" in error_line(invoke("shadow", file, "--agent", "careful", "--domain",
                                                                   "refunds", "--out", tmp_path / "x"))


def test_unicode_and_a_long_turn_survive_whole(tmp_path: Path) -> None:
    """Emoji, other scripts and a 1 MB message reach the candidate and the files as they were (redacted)."""
    said = "退款 🙏 " + "Ünïcödé order 4812 " * 50_000 + f" mail {EMAIL}"
    ids = ["🙏", "conv/../../etc", "Conv-A", "conv-a"]
    traces = jsonl(tmp_path / "t.jsonl", *(conversation(i, turns=[{"role": "user", "text": said}]) for i in ids))
    out = tmp_path / "s"
    report = shadow([traces], "noop", domain="refunds", out=out).report
    assert [c.case_id for c in report.conversations] == ["conversation", "conv-..-..-etc", "Conv-A", "conv-a-2"]
    assert len({p.name.casefold() for p in (out / "cases").iterdir()}) == 4  # one file each, whatever the filesystem
    case = load_yaml((out / "cases" / "conversation.yaml").read_text("utf-8"))  # libyaml: 1 MB in C
    assert case["instruction"] == said.replace(EMAIL, "[REDACTED:email:1]")
    record = json.loads((out / "run" / "trials.jsonl").read_text("utf-8").splitlines()[0])
    assert record["messages"][0]["text"] == case["instruction"]


def test_a_big_file_is_read_line_by_line(tmp_path: Path) -> None:
    """Memory holds the conversations read, not the file's text besides (a 4 MB line, then 8 MB of lines)."""
    big = tmp_path / "big.jsonl"
    filler = "lorem ipsum dolor sit amet " * 150_000
    with big.open("w") as f:
        f.write(json.dumps(conversation("one-big-line", turns=[{"role": "user", "text": filler + EMAIL}])) + "\n")
        for i in range(2000):
            f.write(json.dumps(conversation(f"c{i}", turns=[{"role": "user", "text": filler[:4000]}])) + "\n")
    size = big.stat().st_size
    tracemalloc.start()
    try:
        recorded = load_traces([big], Redactor())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(recorded) == 2001 and recorded[0].conversation.user_texts[0].endswith("[REDACTED:email]")
    assert peak < 2.5 * size, f"peak {peak / 1e6:.0f} MB reading {size / 1e6:.0f} MB"


def test_conversation_ids_must_be_unique_across_files_and_formats(tmp_path: Path) -> None:
    a = jsonl(tmp_path / "a.jsonl", conversation("c1"), conversation("c2"))
    b = jsonl(tmp_path / "b.jsonl", conversation("c3"), conversation("c2"))
    said = error_line(invoke("shadow", a, b, "--agent", "careful", "--domain", "refunds", "--out", tmp_path / "x"))
    assert f"{b}:2: id: conversation 'c2' is also at {a}:2" in said
    otlp = tmp_path / "c.otlp.jsonl"
    otlp.write_text(json.dumps(request([*agent_spans("c1")])) + "\n")
    said = error_line(invoke("shadow", a, otlp, "--agent", "careful", "--domain", "refunds", "--out", tmp_path / "x"))
    assert f"{otlp}: trace {TRACE}: id: conversation 'c1' is also at {a}:1" in said


# ---------------------------------------------------------------- OTLP as collectors and frameworks write it

TRACE = "5b8efff798038103d269b633813fc60c"


def attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)).endswith("Value"):
        return {"key": key, "value": value}  # given encoded
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # int64 is a string in OTLP/JSON
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def span(span_id: str, attrs: dict[str, Any], start: int, *, parent: str | None = None, trace: str = TRACE,
         events: list[dict[str, Any]] | None = None, status: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": trace, "spanId": span_id, "name": span_id, "startTimeUnixNano": str(start),
                           "endTimeUnixNano": str(start + 5), "attributes": [attr(k, v) for k, v in attrs.items()]}
    if parent:
        out["parentSpanId"] = parent
    if events is not None:
        out["events"] = events
    if status is not None:
        out["status"] = status
    return out


def request(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "app"}, "spans": spans}]}]}


def messages(*said: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in said]


def agent_spans(conversation_id: Any = None, **extra: Any) -> list[dict[str, Any]]:
    """An invoke_agent span with the messages and two tool spans, children of a root span that is not in the file."""
    agent = {"gen_ai.operation.name": "invoke_agent",
             "gen_ai.input.messages": messages(("user", "Refund order 4812 please")),
             "gen_ai.output.messages": messages(("assistant", "Refunded 118.50.")), **extra}
    if conversation_id is not None:
        agent["gen_ai.conversation.id"] = conversation_id
    tool = {"gen_ai.operation.name": "execute_tool"}
    return [span("b2", {**tool, "gen_ai.tool.name": "issue_refund", "gen_ai.tool.call.arguments": REFUND,
                        "gen_ai.tool.call.result": {"refund_id": "R-1", **REFUND}, "passhat.step": 2}, 300, parent="a1"),
            span("a1", agent, 100, parent="root-not-exported"),
            span("b1", {**tool, "gen_ai.tool.name": "get_approval", "gen_ai.tool.call.arguments": {"order_id": 4812},
                        "gen_ai.tool.call.result": APPROVAL, "passhat.step": "1"}, 200, parent="a1")]


def read_otlp(tmp_path: Path, *spans: dict[str, Any], name: str = "t.otlp.jsonl") -> Any:
    file = tmp_path / name
    file.write_text(json.dumps(request(list(spans))) + "\n")
    [rec] = load_traces([file], Redactor())
    return rec.conversation


def test_otlp_spans_out_of_order_with_missing_parents_and_int64_strings(tmp_path: Path) -> None:
    c = read_otlp(tmp_path, *agent_spans(conversation_id={"intValue": "90210"}, **{"user.id": 1001}))
    assert c.id == "90210" and c.identity == "1001"  # an intValue id is read as its digits, not dropped
    assert [t.name for _, t in c.tool_turns()] == ["get_approval", "issue_refund"]  # by start time
    assert c.user_texts == ["Refund order 4812 please"] and c.reply == "Refunded 118.50."
    # arguments as a kvlist (an SDK that records attributes as maps), a step given as a string
    kv = {"kvlistValue": {"values": [attr("order_id", 4812)]}}
    spans = agent_spans()
    spans[2]["attributes"] = [a if a["key"] != "gen_ai.tool.call.arguments" else attr("gen_ai.tool.call.arguments", kv)
                              for a in spans[2]["attributes"]]
    c = read_otlp(tmp_path, *spans)
    assert c.tool_turns()[0][1].arguments == {"order_id": 4812}


def test_otlp_messages_in_span_events_are_read(tmp_path: Path) -> None:
    [_, agent, tool] = agent_spans()
    bare = [a for a in agent["attributes"] if not a["key"].endswith("messages")]
    details = {"name": "gen_ai.client.inference.operation.details", "timeUnixNano": "150", "attributes": [
        attr("gen_ai.input.messages", messages(("user", "Refund order 4812 please"))),
        attr("gen_ai.output.messages", messages(("assistant", "Refunded 118.50.")))]}
    c = read_otlp(tmp_path, {**agent, "attributes": bare, "events": [details]}, tool)
    assert (c.user_texts, c.reply) == (["Refund order 4812 please"], "Refunded 118.50.")
    legacy = [{"name": "gen_ai.content.prompt", "attributes": [
                  attr("gen_ai.prompt", [{"role": "user", "content": "Refund order 4812 please"}])]},
              {"name": "gen_ai.content.completion", "attributes": [
                  attr("gen_ai.completion", [{"role": "assistant", "content": "Refunded."}])]}]
    c = read_otlp(tmp_path, {**agent, "attributes": bare, "events": legacy}, tool)
    assert (c.user_texts, c.reply) == (["Refund order 4812 please"], "Refunded.")
    per_message = [{"name": "gen_ai.user.message", "attributes": [attr("gen_ai.system", "openai")]}]
    with pytest.raises(PasshatError, match=r"t\.otlp\.jsonl: trace 5b8e\w+: no user message: .*per-message events "
                                        r"\(gen_ai\.user\.message\)"):
        read_otlp(tmp_path, {**agent, "attributes": bare, "events": per_message}, tool)


@pytest.mark.parametrize(("broken", "said"), [
    ({"startTimeUnixNano": "yesterday"}, "span b1: startTimeUnixNano: expected nanoseconds since the epoch"),
    ({"status": "ERROR"}, None),  # a status that is not an object: read as no status, not a crash
    ({"attributes": [attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", "wire_money"),
                     attr("gen_ai.tool.call.arguments", {"to": EMAIL})]}, "span b1: name: unknown tool 'wire_money'"),
])
def test_broken_otlp_spans_are_bad_input_naming_the_span(tmp_path: Path, broken: dict[str, Any], said: str | None) -> None:
    spans = agent_spans()
    spans[2] = {**spans[2], **broken}
    file = tmp_path / "t.otlp.jsonl"
    file.write_text(json.dumps(request(spans)) + "\n")
    r = invoke("shadow", file, "--agent", "careful", "--domain", "refunds", "--out", tmp_path / "out")
    if said is None:
        assert r.exit_code in (0, 1), r.output
        return
    assert f"t.otlp.jsonl: trace {TRACE}: {said}" in error_line(r)
    assert not any(s in r.output for s in SECRETS) and not (tmp_path / "out").exists()


def test_a_resource_that_is_not_an_object_is_bad_input(tmp_path: Path) -> None:
    file = tmp_path / "t.otlp.jsonl"
    file.write_text(json.dumps({"resourceSpans": ["oops"]}) + "\n")
    said = error_line(invoke("shadow", file, "--agent", "careful", "--domain", "refunds", "--out", tmp_path / "out"))
    assert "t.otlp.jsonl:1: resourceSpans.0: expected an object" in said


# ---------------------------------------------------------------- redaction of everything read


def personal_jsonl(path: Path) -> Path:
    """Personal values in every position a JSONL conversation has."""
    turns = [
        {"role": "user", "text": f"I'm {EMAIL}, call {PHONE}. Refund order 4812 to card {CARD}, it was approved."},
        {"role": "tool", "name": "get_customer", "arguments": {},
         "result": {"id": "C-1001", "contacts": [EMAIL, {"phone": PHONE, "cards": [CARD]}], EMAIL: {PHONE: CARD}}},
        {"role": "tool", "name": "get_approval", "arguments": json.dumps({"order_id": 4812, "by": EMAIL}),
         "result": APPROVAL},
        {"role": "tool", "name": "list_refunds", "arguments": {"order_id": 4812, "filter": [f"card {CARD}", {EMAIL: PHONE}]},
         "error": f"no refunds for {EMAIL}", "error_type": "timeout"},
        {"role": "tool", "name": "issue_refund", "arguments": REFUND, "error": f"timeout paying {CARD} for {EMAIL} ({PHONE})",
         "error_type": "lost_response"},
        {"role": "tool", "name": "add_note", "arguments": {"order_id": 4812, "body": f"paid by {CARD}"},
         "result": {"note_id": "N-1", "card": 4111111111111111, "phone": 13800138000}},
        {"role": "assistant", "text": f"Anything else, {EMAIL}?"},
        {"role": "user", "text": f"Yes: text me at {PHONE}."},
        {"role": "tool", "name": "send_email", "arguments": {"order_id": 4812, "template": "general", "body": f"to {EMAIL}"},
         "result": {"email_id": "E-1", "to": EMAIL}},
        {"role": "assistant", "text": f"Done, {EMAIL}; card {CARD} refunded, we will call {PHONE}."},
    ]
    return jsonl(path, {"id": PHONE, "identity": "C-1001", "turns": turns,  # an e-mail identity: in the OTLP trace
                        "tags": {"channel": "sms", "caller": PHONE, EMAIL: "vip"}})


def personal_otlp(path: Path) -> Path:
    """Personal values in every position an OTLP trace has (ids, attributes, events, status messages)."""
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": f"chat {EMAIL}", "user.id": EMAIL,
             "gen_ai.output.messages": messages(("assistant", f"Refunded {CARD}, {EMAIL}."))}
    event = {"name": "gen_ai.client.inference.operation.details", "attributes": [
        attr("gen_ai.input.messages", messages(("user", f"Refund 4812; I am {EMAIL}, {PHONE}")))]}
    tool = {"gen_ai.operation.name": "execute_tool"}
    spans = [span("a1", agent, 100, trace=EMAIL, events=[event]),
             span(PHONE, {**tool, "gen_ai.tool.name": "get_approval", "gen_ai.tool.call.arguments": {"order_id": 4812},
                          "gen_ai.tool.call.result": {**APPROVAL, "approved_by": EMAIL, PHONE: [CARD]}}, 200, trace=EMAIL),
             span("a3", {**tool, "gen_ai.tool.name": "issue_refund", "gen_ai.tool.call.arguments": REFUND,
                         "error.type": "timeout"}, 300, trace=EMAIL, status={"code": 2, "message": f"card {CARD} timed out"})]
    path.write_text(json.dumps(request(spans)) + "\n")
    return path


def files_holding(folder: Path, secrets: tuple[str, ...] = SECRETS) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8", errors="replace")
        hits = [s for s in secrets if s in text or s in str(path.relative_to(folder))]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found


@pytest.mark.parametrize("agent", ["careful", "hasty"])
def test_no_file_or_output_of_shadow_and_promote_holds_a_personal_value(tmp_path: Path, agent: str) -> None:
    traces = [personal_jsonl(tmp_path / "prod.jsonl"), personal_otlp(tmp_path / "prod.otlp.jsonl")]
    out = tmp_path / "shadow"
    r = invoke("shadow", *traces, "--agent", agent, "--domain", "refunds", "--out", out, "--trials", "2")
    assert r.exit_code in (0, 1), r.output
    written = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {"shadow.json", "conversations.jsonl", "run/manifest.json", "run/trials.jsonl", "run/summary.json"} <= written
    assert len([p for p in written if p.startswith("cases/")]) == 2
    assert files_holding(out) == {}
    assert not any(s in r.output for s in SECRETS), r.output
    report = ShadowReport.load(out / "shadow.json")
    assert report.redaction["numbered"] is True
    suite = tmp_path / "suite" / "cases"
    for c in report.conversations:
        for expect in ("production", "candidate"):
            p = invoke("shadow", "promote", out, c.id, "--to", suite / expect, "--expect", expect)
            assert p.exit_code == 0, p.output
            assert not any(s in p.output for s in SECRETS), p.output
    assert len(list(suite.rglob("*.yaml"))) == 4 and files_holding(tmp_path / "suite") == {}
    again = invoke("shadow", "promote", out, report.conversations[0].id, "--to", suite / "production")
    assert "already exists" in error_line(again) and not any(s in again.output for s in SECRETS)


def test_malformed_lines_are_named_without_their_personal_values(tmp_path: Path) -> None:
    bad = [conversation(EMAIL, turns=[{"role": EMAIL, "text": "hi"}]),
           conversation(EMAIL, turns=[{"role": "user", "text": "hi", EMAIL: PHONE}]),
           conversation(EMAIL, turns=[{"role": "user", "text": CARD}, {"role": "tool", "name": f"get_{EMAIL}"}]),
           conversation(EMAIL, identity=[EMAIL]),
           conversation(EMAIL, fixture=EMAIL),
           conversation(EMAIL, domain=PHONE),
           conversation(EMAIL, turns=[{"role": "user", "text": EMAIL},
                                      {"role": "tool", "name": "add_note", "arguments": {}, "error": EMAIL,
                                       "error_type": PHONE}])]
    for i, c in enumerate(bad):
        r = invoke("shadow", jsonl(tmp_path / f"bad{i}.jsonl", c), "--agent", "careful", "--domain", "refunds",
                   "--out", tmp_path / "out")
        said = error_line(r)
        assert f"bad{i}.jsonl:1: " in said and not any(s in r.output for s in SECRETS), r.output


def test_no_redact_is_recorded_in_the_manifest_and_the_report(tmp_path: Path) -> None:
    out = tmp_path / "s"
    r = invoke("shadow", personal_jsonl(tmp_path / "prod.jsonl"), "--agent", "careful", "--domain", "refunds",
               "--out", out, "--no-redact")
    assert r.exit_code in (0, 1), r.output
    assert json.loads((out / "run" / "manifest.json").read_text())["redaction"]["enabled"] is False
    assert ShadowReport.load(out / "shadow.json").redaction["enabled"] is False
    assert EMAIL in (out / "conversations.jsonl").read_text()


# ---------------------------------------------------------------- one placeholder per value


def test_numbered_placeholders_tell_values_apart_and_keep_one_value_one_placeholder() -> None:
    r = Redactor(numbered=True)
    out = r.value({"a": f"write to {EMAIL}", "b": "and to bob@other.example", "c": f"or {EMAIL.upper()}",
                   "d": [CARD, "4111-1111-1111-1111", "5500 0000 0000 0004"], PHONE: "+14155552671"})
    assert out == {"a": "write to [REDACTED:email:1]", "b": "and to [REDACTED:email:2]", "c": "or [REDACTED:email:1]",
                   "d": ["[REDACTED:card:1]", "[REDACTED:card:1]", "[REDACTED:card:2]"],
                   "[REDACTED:phone:1]": "[REDACTED:phone:1]"}
    assert r.value(out) == out  # placeholders are left as they are: redacting twice changes nothing
    assert Redactor().text(f"{EMAIL} bob@other.example") == "[REDACTED:email] [REDACTED:email]"  # passhat run's


def test_a_candidate_writing_to_another_address_is_not_the_same(tmp_path: Path) -> None:
    """Production e-mailed the customer's address; a candidate that e-mails another one must diverge, although
    both addresses are redacted before anything is compared. One that copies the (redacted) address matches."""
    body = "Your refund is on its way; a copy goes to {to}"
    turns = [{"role": "user", "text": f"Email me about order 4812 at {EMAIL}"},
             {"role": "tool", "name": "send_email", "arguments": {"order_id": 4812, "template": "general",
                                                                  "body": body.format(to=EMAIL)},
              "result": {"email_id": "E-1"}},
             {"role": "assistant", "text": "Sent."}]
    traces = jsonl(tmp_path / "t.jsonl", conversation(turns=turns))
    spec = agent_file(tmp_path, f"""
import re

async def agent(episode):
    copied = re.search(r"at (\\S+)$", episode.instruction).group(1)
    to = "mallory@evil.example" if "wrong" in episode.tags.get("variant", "") else copied
    await episode.call("send_email", {{"order_id": 4812, "template": "general", "body": {body!r}.format(to=to)}})
    return "Sent."
""")
    right = shadow([traces], spec, domain="refunds", out=tmp_path / "right").report
    assert right.conversations[0].status == "same", right.conversations[0]
    wrong_traces = jsonl(tmp_path / "w.jsonl", conversation(turns=turns, tags={"variant": "wrong"}))
    wrong = shadow([wrong_traces], spec, domain="refunds", out=tmp_path / "wrong").report
    [trial] = wrong.conversations[0].trials
    assert wrong.conversations[0].status == "diverges" and [d.fields for d in trial.different] == [["body"]]
    assert trial.different[0].production["body"] == body.format(to="[REDACTED:email:1]")
    assert trial.different[0].candidate["body"] == body.format(to="[REDACTED:email:2]")
    assert "mallory" not in (tmp_path / "wrong" / "run" / "trials.jsonl").read_text()


def test_a_write_equal_once_an_id_is_aliased_is_the_same() -> None:
    """The alias comes from a pair of different refunds; the note quoting the refund then matches production's,
    as ``same``, not as a ``different`` write with no differing field."""
    prod = [Call("issue_refund", {"order_id": 1, "amount": 118.5}, {"refund_id": "R-100"}),
            Call("add_note", {"order_id": 1, "body": "refunded as R-100"}, {})]
    cand = [Call("issue_refund", {"order_id": 1, "amount": 259.0}, {"refund_id": "R-200"}),
            Call("add_note", {"order_id": 1, "body": "refunded as R-200"}, {})]
    result = compare_writes(prod, cand)
    assert [(p.tool, fields) for p, _, _, fields in result.different] == [("issue_refund", ["amount"])]
    assert [(p.tool, c.tool) for p, c in result.same] == [("add_note", "add_note")]


def test_words_and_amounts_in_results_are_not_taken_for_generated_ids() -> None:
    """A wrong reason or amount repeated in a later write stays different; a generated id is aliased."""
    prod = [Call("cancel_order", {"order_id": 1, "reason": "fraud"}, {"id": "X-100", "reason": "fraud", "paid": "118.50"}),
            Call("add_note", {"order_id": 1, "body": "fraud 118.50 X-100"}, {})]
    cand = [Call("cancel_order", {"order_id": 1, "reason": "duplicate"},
                 {"id": "X-200", "reason": "duplicate", "paid": "259.00"}),
            Call("add_note", {"order_id": 1, "body": "duplicate 259.00 X-200"}, {})]
    result = compare_writes(prod, cand)
    assert result.aliases == {"X-200": "X-100"}
    assert [(p.tool, fields) for p, _, _, fields in result.different] == [("cancel_order", ["reason"]),
                                                                        ("add_note", ["body"])]
    assert result.different[1][2]["body"] == "duplicate 259.00 X-100"


# ---------------------------------------------------------------- candidates that crash, hang, stray or cannot run


def test_a_hung_candidate_and_one_calling_unknown_tools_are_reported_and_the_rest_run(traffic: dict[str, Traffic],
                                                                                    tmp_path: Path) -> None:
    spec = agent_file(tmp_path, """
async def agent(episode):
    if "blender" in episode.instruction:
        await asyncio.sleep(3600)
    if "got a message" in episode.instruction:
        await episode.call("wire_money", {"to": "someone"})
    return await play(episode, "careful")
""")
    r = invoke("shadow", traffic["careful"].jsonl, "--agent", spec, "--domain", "refunds", "--out", tmp_path / "s",
               "--max-seconds", "1")
    assert r.exit_code == 1, r.output
    report = ShadowReport.load(tmp_path / "s" / "shadow.json")
    hung = {c.id for c in report.conversations if c.status == "diverges"}
    assert hung == traffic["careful"].ids("store-credit-4820")
    for c in report.conversations:
        [t] = c.trials
        if c.id in hung:
            assert t.end_reason == "time_limit" and t.problem is not None and t.problem.startswith("time limit")
        stray = c.id in traffic["careful"].ids("order-number-on-request-4840")
        assert t.unknown_tools == (["wire_money"] if stray else []), c.id
        assert (c.status == "same") == (c.id not in hung)  # an unknown tool changes nothing: not a divergence
    text = " ".join(r.output.split())
    assert "time_limit: time limit" in text and "called unknown tool wire_money" in text
    assert report.max_seconds == 1


def test_infrastructure_errors_make_the_run_incomplete_not_clean(traffic: dict[str, Traffic], tmp_path: Path) -> None:
    spec = agent_file(tmp_path, """
async def agent(episode):
    if "4812" in episode.instruction:
        raise InfrastructureError("provider down (503)")
    return await play(episode, "careful")
""")
    r = invoke("shadow", traffic["careful"].jsonl, "--agent", spec, "--domain", "refunds", "--out", tmp_path / "a")
    assert r.exit_code == 4, r.output
    report = ShadowReport.load(tmp_path / "a" / "shadow.json")
    unmeasured = {c.id for c in report.conversations if c.status == "unmeasured"}
    assert unmeasured == {c.id for c in report.conversations if "4812" in c.id} and report.unmeasured == 6
    assert report.shares[0].of == 6 and all(c.status == "same" for c in report.conversations if c.id not in unmeasured)
    assert "incomplete" in r.output and "provider down (503)" in r.output
    # allowing every error does not turn "nothing measured" into "no divergence"
    down = agent_file(tmp_path, 'async def agent(episode):\n    raise InfrastructureError("down")\n')
    r = invoke("shadow", traffic["careful"].jsonl, "--agent", down, "--domain", "refunds", "--out", tmp_path / "b",
               "--max-error-rate", "1")
    assert r.exit_code == 4 and "no conversation could be compared" in r.output, r.output


def test_a_flaky_candidate_over_three_trials_shows_its_consistency(traffic: dict[str, Traffic], tmp_path: Path) -> None:
    r = invoke("shadow", traffic["careful"].jsonl, "--agent", "flaky", "--domain", "refunds", "--out", tmp_path / "s",
               "--trials", "3")
    report = ShadowReport.load(tmp_path / "s" / "shadow.json")
    assert all(c.measured == 3 and len(c.trials) == 3 for c in report.conversations)
    assert all((c.status == "diverges") == (c.diverging > 0) for c in report.conversations)
    sometimes = [c for c in report.conversations if 0 < c.diverging < 3]
    assert sometimes, "with a 30 % lapse rate some conversation diverges in some trials, not all"
    assert r.exit_code == 1 and any(f"{c.id} " in line and f" {c.diverging}/3 " in line
                                    for c in sometimes for line in r.output.splitlines()), r.output
    assert {s.kind: s.of for s in report.shares}["any"] == 12  # conversations, not trials


# ---------------------------------------------------------------- promote


def test_promote_a_conversation_with_refused_and_lost_writes(tmp_path: Path) -> None:
    """A refused write changed nothing, a lost response did: the case expects the lost refund and replays the loss
    (that a promoted case passes with the agent whose writes it expects: test_shadow_promote.py)."""
    turns = [{"role": "user", "text": "Hi, please refund my order 4812, it was approved."},
             {"role": "tool", "name": "get_approval", "arguments": {"order_id": 4812}, "result": APPROVAL},
             {"role": "tool", "name": "issue_refund", "arguments": {**REFUND, "amount": 500.0},
              "error": "amount exceeds the approval", "error_type": "refused"},
             {"role": "tool", "name": "issue_refund", "arguments": REFUND, "error": "timeout: no response",
              "error_type": "lost_response"},
             {"role": "tool", "name": "list_refunds", "arguments": {"order_id": 4812}, "result": [{"refund_id": "R-9"}]},
             {"role": "assistant", "text": "Refunded 118.50 USD."}]
    out = tmp_path / "s"
    shadow([jsonl(tmp_path / "t.jsonl", conversation("lost-1", turns=turns))], "careful", domain="refunds", out=out)
    file = promote(out, "lost-1", tmp_path / "suite")
    case = yaml.safe_load(file.read_text())
    assert case["reference"] == [{"tool": "issue_refund", "args": REFUND}]
    assert [(f["tool"], f["kind"], f["message"]) for f in case["faults"]] == [
        ("issue_refund", "drop_response", "timeout: no response")]
    lint = invoke("cases", "lint", tmp_path / "suite")
    assert lint.exit_code == 0, lint.output


def test_promote_an_unknown_id_names_the_nearest(traffic: dict[str, Traffic], tmp_path: Path) -> None:
    out = tmp_path / "s"
    shadow([traffic["careful"].jsonl], "careful", domain="refunds", out=out)
    said = error_line(invoke("shadow", "promote", out, "refund-4812-t2", "--to", tmp_path / "c"))
    assert "no conversation 'refund-4812-t2'; nearest: " in said and "(of 12; every id is in shadow.json)" in said
    assert "refund-4812-t0" in said and "refund-4812-t1" in said
    said = error_line(invoke("shadow", "promote", out, "zzz", "--to", tmp_path / "c"))
    assert "no conversation 'zzz'; it has: " in said and "refund-4812-t0" in said
    assert not (tmp_path / "c").exists()


def test_a_span_delivered_twice_is_read_once(tmp_path: Path) -> None:
    """Collectors deliver at least once: a retried export repeats spans, which must not read as production
    making the same refund twice."""
    file = tmp_path / "t.otlp.jsonl"
    line = json.dumps(request(agent_spans())) + "\n"
    file.write_text(line + line)
    [rec] = load_traces([file], Redactor())
    assert [t.name for _, t in rec.conversation.tool_turns()] == ["get_approval", "issue_refund"]
