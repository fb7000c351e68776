"""Redaction first: nothing read from production reaches a file shadow writes (or its output) unredacted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from passhat.cli import main

EMAIL, PHONE, CARD = "jane.doe@corp.example", "+1 415 555 2671", "4111 1111 1111 1111"
SECRETS = (EMAIL, PHONE, CARD, "4111111111111111", "jane.doe")


def personal_trace(path: Path) -> Path:
    """One conversation with an e-mail address, a phone number and a card number everywhere a value can be."""
    customer = {"id": "C-1001", "name": "Jane Doe", "email": EMAIL, "phone": PHONE, "store_credit": 0.0}
    turns = [
        {"role": "user", "text": f"Hi, I'm {EMAIL} (call {PHONE}). Refund order 4812 to my card {CARD}, it was approved."},
        {"role": "tool", "name": "get_customer", "arguments": {}, "result": customer},
        {"role": "tool", "name": "get_order", "arguments": {"order_id": 4812},
         "result": {"id": 4812, "customer_id": "C-1001", "total": 259.0, "status": "delivered", "card": CARD}},
        {"role": "tool", "name": "get_approval", "arguments": {"order_id": 4812},
         "result": {"order_id": 4812, "amount": 118.5, "approved_by": EMAIL}},
        {"role": "tool", "name": "add_note", "arguments": {"order_id": 4812, "body": f"customer {EMAIL} {PHONE}"},
         "error": f"note rejected for {EMAIL}"},
        {"role": "tool", "name": "send_email", "arguments": {"order_id": 4812, "template": "general", "body": f"To {EMAIL}"},
         "result": {"email_id": "E-1", "to": EMAIL, EMAIL: PHONE}},
        {"role": "assistant", "text": f"Done, {EMAIL}; card {CARD} refunded, we will call {PHONE}."},
    ]
    path.write_text(json.dumps({"id": f"conv-{EMAIL}", "identity": "C-1001", "turns": turns,
                                "tags": {"contact": PHONE, EMAIL: "x"}}) + "\n")
    return path


def files_holding(folder: Path, secrets: tuple[str, ...]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = path.read_text("utf-8", errors="replace")
        hits = [s for s in secrets if s in text or s in str(path)]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found


@pytest.mark.parametrize("agent", ["careful", "hasty"])
def test_no_file_shadow_writes_holds_a_personal_value(tmp_path: Path, agent: str) -> None:
    traces = personal_trace(tmp_path / "prod.jsonl")
    out = tmp_path / "shadow"
    r = CliRunner().invoke(main, ["shadow", str(traces), "--agent", agent, "--domain", "refunds", "--out", str(out)])
    assert r.exit_code in (0, 1), r.output
    written = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"shadow.json", "conversations.jsonl", "manifest.json", "trials.jsonl",
                                          "summary.json"} and any(p.suffix == ".yaml" for p in written)
    assert files_holding(out, SECRETS) == {}
    assert not any(s in r.output for s in SECRETS)
    assert "[REDACTED:email:1]" in (out / "conversations.jsonl").read_text()  # a placeholder per value
    conv = json.loads((out / "shadow.json").read_text())["conversations"][0]["id"]
    promoted = CliRunner().invoke(main, ["shadow", "promote", str(out), conv, "--to", str(tmp_path / "suite" / "cases")])
    assert promoted.exit_code == 0, promoted.output
    assert files_holding(tmp_path / "suite", SECRETS) == {}


def test_the_check_can_fail_no_redact_keeps_the_values(tmp_path: Path) -> None:
    traces = personal_trace(tmp_path / "prod.jsonl")
    out = tmp_path / "shadow"
    r = CliRunner().invoke(main, ["shadow", str(traces), "--agent", "careful", "--domain", "refunds", "--out", str(out),
                                  "--no-redact"])
    assert r.exit_code in (0, 1), r.output
    assert set(files_holding(out, (EMAIL,))) >= {"conversations.jsonl", "shadow.json", "run/trials.jsonl"}
