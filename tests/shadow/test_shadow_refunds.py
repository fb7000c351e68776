"""The must-show: shadow flags the hasty agent's duplicate refunds and leaves the careful agent's conversations alone.

Production-like traffic comes from tests/shadow/conftest.py (careful and hasty on six refunds cases, two
trials each). The candidate replays each conversation in the sandbox; production's reads are served from
the recording, its lost responses replayed as faults.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from scipy.stats import binomtest

from passhat.cli import main
from passhat.models.shadow import ConversationResult, ShadowReport
from passhat.redaction import Redactor
from passhat.shadow import load_traces, shadow
from tests.shadow.conftest import CASES, TRIALS, Traffic


def wilson_by_scipy(k: int, n: int) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(method="wilson")
    return float(ci.low), float(ci.high)


def writes_of(c: ConversationResult, kind: str, tool: str) -> int:
    """How many ``kind`` writes (extra, missing, duplicate) of ``tool`` the conversation's trials show."""
    measured = [t for t in c.trials if t.outcome != "error"]
    if kind == "duplicate":
        return sum(d.times - 1 for t in measured for d in t.duplicates if d.tool == tool)
    return sum(1 for t in measured for w in getattr(t, kind) if w.tool == tool)


def with_any(report: ShadowReport, kind: str, tool: str) -> set[str]:
    return {c.id for c in report.conversations if writes_of(c, kind, tool)}


@pytest.mark.parametrize("form", ["jsonl", "otlp"])
def test_careful_replayed_on_its_own_traffic_does_not_diverge(traffic: dict[str, Traffic], tmp_path: Path,
                                                              form: str) -> None:
    r = CliRunner().invoke(main, ["shadow", str(getattr(traffic["careful"], form)), "--agent", "careful", "--domain",
                                  "refunds", "--out", str(tmp_path / "s"), "--trials", "2"])
    assert r.exit_code == 0, r.output
    report = ShadowReport.load(tmp_path / "s" / "shadow.json")
    assert len(report.conversations) == len(CASES) * TRIALS
    assert [c.status for c in report.conversations] == ["same"] * len(CASES) * TRIALS
    for c in report.conversations:
        assert c.measured == 2 and all(t.kinds == [] and t.same == len(c.production_writes) for t in c.trials)
        assert all(t.reads_served > 0 and t.reads_unrecorded == 0 for t in c.trials), c.id  # every read was recorded
    assert report.shares[0].kind == "any" and report.shares[0].conversations == 0
    assert (report.shares[0].ci_low, report.shares[0].ci_high) == pytest.approx(wilson_by_scipy(0, 12))
    assert "no divergence" in r.output


def test_hasty_candidate_double_refunds_exactly_where_production_lost_a_response(traffic: dict[str, Traffic],
                                                                                 tmp_path: Path) -> None:
    result = shadow([traffic["careful"].jsonl], "hasty", domain="refunds", trials=2, out=tmp_path / "s")
    report = result.report
    careful = traffic["careful"]
    lost_refund, lost_email = careful.ids("refund-4812-drop-response"), careful.ids("email-drop-4870")
    assert with_any(report, "duplicate", "issue_refund") == lost_refund
    assert with_any(report, "extra", "issue_refund") == lost_refund
    assert with_any(report, "duplicate", "send_email") == lost_email
    assert with_any(report, "extra", "send_email") == lost_email
    for c in report.conversations:
        if c.id in lost_refund:  # one extra refund in every trial: the blind retry
            assert writes_of(c, "duplicate", "issue_refund") == writes_of(c, "extra", "issue_refund") == 2
            assert all(t.duplicates[0].arguments == {"order_id": 4812, "amount": 118.5, "method": "original_payment"}
                       for t in c.trials)
        elif c.id not in lost_email:
            assert not any(t.extra or t.missing or t.duplicates for t in c.trials), c.id
    # where the approval read timed out, hasty refunds the order total instead of the approved amount
    timed_out = [c for c in report.conversations if c.id in careful.ids("approval-timeout-4812")]
    assert {(d.tool, tuple(d.fields), d.production["amount"], d.candidate["amount"])
            for c in timed_out for t in c.trials for d in t.different if d.tool == "issue_refund"} == {
        ("issue_refund", ("amount",), 118.5, 259.0)}
    shares = {s.kind: s for s in report.shares}
    assert shares["duplicate"].conversations == 4 and shares["duplicate"].of == 12
    assert (shares["duplicate"].ci_low, shares["duplicate"].ci_high) == pytest.approx(wilson_by_scipy(4, 12))
    assert shares["production_duplicate"].conversations == 0
    assert report.exit_code == 1


def test_hasty_traffic_shows_production_duplicates_a_careful_candidate_does_not_repeat(traffic: dict[str, Traffic],
                                                                                       tmp_path: Path) -> None:
    report = shadow([traffic["hasty"].otlp], "careful", domain="refunds", out=tmp_path / "s").report
    hasty = traffic["hasty"]
    dup = {c.id: {(d.tool, d.times) for d in c.production_duplicates} for c in report.conversations
           if c.production_duplicates}
    assert dup == {**dict.fromkeys(hasty.ids("refund-4812-drop-response"), {("issue_refund", 2)}),
                   **dict.fromkeys(hasty.ids("email-drop-4870"), {("send_email", 2)})}
    assert with_any(report, "missing", "issue_refund") >= hasty.ids("refund-4812-drop-response")
    assert all("production_duplicate" in c.kinds for c in report.conversations if c.id in dup)
    assert not any(t.duplicates for c in report.conversations for t in c.trials)  # careful never repeats a write


def test_both_trace_formats_hold_the_same_conversations(traffic: dict[str, Traffic]) -> None:
    for agent in ("careful", "hasty"):
        redactor = Redactor()
        jsonl = {r.conversation.id: r.conversation for r in load_traces([traffic[agent].jsonl], redactor)}
        otlp = {r.conversation.id: r.conversation for r in load_traces([traffic[agent].otlp], redactor)}
        assert jsonl.keys() == otlp.keys()
        for cid, a in jsonl.items():
            b = otlp[cid]
            assert (a.user_texts, a.reply, a.identity, a.fixture, a.domain) == (b.user_texts, b.reply, b.identity,
                                                                                b.fixture, b.domain)
            assert [t.model_dump() for _, t in a.tool_turns()] == [t.model_dump() for _, t in b.tool_turns()]


def test_the_shadow_folder_holds_the_recording_the_cases_the_run_and_the_report(traffic: dict[str, Traffic],
                                                                               tmp_path: Path) -> None:
    out = tmp_path / "s"
    shadow([traffic["careful"].jsonl], "careful", domain="refunds", out=out)
    assert sorted(p.name for p in out.iterdir()) == ["cases", "conversations.jsonl", "run", "shadow.json"]
    again = shadow([out / "conversations.jsonl"], "careful", domain="refunds", out=tmp_path / "again")
    assert again.report.exit_code == 0  # the redacted recording is itself valid input
    manifest: dict[str, Any] = json.loads((out / "run" / "manifest.json").read_text())
    assert manifest["cassette"]["mode"] == "shadow" and manifest["trials"] == 1
    lost = next(p for p in (out / "cases").iterdir() if p.name.startswith("refund-4812-drop-response"))
    assert "kind: drop_response" in lost.read_text()  # production's lost response, replayed for the candidate


def test_ignore_reply_leaves_the_verdict_to_the_writes(traffic: dict[str, Traffic], tmp_path: Path) -> None:
    """Hasty's replies never name the refund, careful's do: with --ignore-reply only the writes decide."""
    hasty = traffic["hasty"]
    counted = shadow([hasty.jsonl], "careful", domain="refunds", out=tmp_path / "a").report
    ignored = shadow([hasty.jsonl], "careful", domain="refunds", out=tmp_path / "b", replies=False).report
    assert all(c.status == "diverges" for c in counted.conversations)
    lost = hasty.ids("refund-4812-drop-response") | hasty.ids("email-drop-4870")
    # the approval read that timed out: hasty refunded the order total, careful the approved amount
    wrong_amount = hasty.ids("approval-timeout-4812")
    assert {c.id for c in ignored.conversations if c.status == "diverges"} == lost | wrong_amount
    assert all(t.reply is not None and t.reply.extra and "reply" not in t.kinds
               for c in ignored.conversations for t in c.trials)
    assert not ignored.replies_counted and ignored.exit_code == 1


def test_only_the_same_write_twice_is_a_duplicate(tmp_path: Path) -> None:
    """Two notes on one order are two writes of one tool, not a duplicate; the same note twice is. (The traffic
    above never writes one tool twice with other arguments, so it alone could not tell the two apart.)"""
    notes = [{"order_id": 4812, "body": "customer called"}, {"order_id": 4812, "body": "refund approved by Lin"}]
    turns: list[dict[str, Any]] = [{"role": "user", "text": "Please note on order 4812 that I called and it was approved."}]
    turns += [{"role": "tool", "name": "add_note", "arguments": n, "result": {"note_id": f"N-{i}"}}
              for i, n in enumerate(notes)]
    traces = tmp_path / "notes.jsonl"
    traces.write_text(json.dumps({"id": "notes", "identity": "C-1001", "turns": turns}) + "\n")
    candidate = tmp_path / "notes_agent.py"
    candidate.write_text(f"""
async def agent(episode):
    notes = {notes!r}
    for note in (notes if "again" not in episode.case_id else [notes[0], notes[0], notes[1]]):
        await episode.call("add_note", note)
""")
    both = shadow([traces], f"{candidate}:agent", domain="refunds", out=tmp_path / "a").report.conversations[0]
    assert both.status == "same" and both.trials[0].same == 2 and not both.trials[0].duplicates
    traces.write_text(traces.read_text().replace('"notes"', '"notes-again"', 1))
    again = shadow([traces], f"{candidate}:agent", domain="refunds", out=tmp_path / "b").report.conversations[0]
    assert again.kinds == ["extra", "duplicate"] and [(d.arguments, d.times) for d in again.trials[0].duplicates] == [
        (notes[0], 2)]
