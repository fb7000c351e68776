"""`passhat run SUITE --agent openai:MODEL --base-url ...` against the local fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from scripts import reimbursement_clerk

from passhat.cli import main
from passhat.runner import RunStore
from passhat.seeding import derive_seed, trial_seed
from passhat.testing.fake_models import FakeRequest, Turn, scripted
from tests.llm.helpers import notes_case

DOOMED = derive_seed("agent", trial_seed(0, "inv-102", 1))
"""The agent seed of inv-102's second trial: the server fails every request that carries it."""


def clerk_with_an_outage(req: FakeRequest) -> Turn:
    return Turn(always=500, text="upstream overloaded") if req.seed == DOOMED else reimbursement_clerk(req)


def test_reimbursement_run_records_calls_tokens_cost_latency_and_an_outage_as_error(
    serve: Any, tmp_path: Path, prices_file: Path
) -> None:
    server = serve(clerk_with_an_outage)
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [
        "run", "reimbursement", "--agent", "openai:scripted-model", "--base-url", server.openai_url,
        "-k", "2", "--retries", "2", "--retry-delay", "0.001", "--prices", str(prices_file), "--out", str(out), "-q",
    ])
    assert result.exit_code == 0, result.output
    records = {r.key: r for r in RunStore(out).load()}
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(records) == 2 * len(manifest["suite"]["cases"])

    outage = records[("inv-102", 1)]
    assert (outage.outcome, outage.attempt) == ("error", 2)
    assert "InfrastructureError" in (outage.error or "")
    assert [r.key for r in records.values() if r.outcome == "error"] == [("inv-102", 1)]

    good = records[("inv-102", 0)]
    assert good.outcome == "pass", good.failed_grades()
    assert [c.tool for c in good.calls] == ["query_invoices", "search_policy", "create_reimbursement_ticket"]
    graded = [r for r in records.values() if r.outcome != "error"]
    assert all(r.usage.input_tokens > 0 and r.usage.output_tokens > 0 for r in graded)
    assert all(r.usage.cost > 0 and r.usage.time_to_first_token_s is not None for r in graded)
    assert all(r.model_calls and all(m.latency_s for m in r.model_calls) for r in graded)
    assert good.usage.cost == sum(m.cost for m in good.model_calls)

    agent = manifest["models"]["agent"]
    assert agent["model"] == "scripted-model" and agent["temperature"] is None
    assert agent["prompt_hash"] and agent["price"] == {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
    assert "per trial" in agent["seed"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["suite"]["errors"] == 1


def test_anthropic_agent_runs_through_the_cli(serve: Any, tmp_path: Path, prices_file: Path) -> None:
    from passhat.testing.fake_models import ToolUse

    server = serve(scripted([Turn(tool_calls=[ToolUse("add_note", {"title": "call mom", "priority": 2})]),
                             Turn(text="I added it. ###DONE###")]))
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [
        "run", str(notes_case(tmp_path)), "--agent", "anthropic:scripted-model", "--base-url", server.anthropic_url + "/v1",
        "-k", "2", "--prices", str(prices_file), "--out", str(out), "-q", "--temperature", "0",
    ])
    assert result.exit_code == 0, result.output
    assert [r.outcome for r in RunStore(out).load()] == ["pass", "pass"]
    assert server.requests[0].api == "anthropic" and server.requests[0].body["temperature"] == 0.0
    assert json.loads((out / "manifest.json").read_text())["models"]["agent"]["temperature"] == 0.0


def test_unpriced_models_are_flagged_and_bad_options_rejected(serve: Any, tmp_path: Path) -> None:
    server = serve(scripted([Turn(text="ok ###DONE###")]))
    runner = CliRunner()
    result = runner.invoke(main, ["run", str(notes_case(tmp_path)), "--agent", "openai:no-such-price",
                                  "--base-url", server.openai_url, "-k", "1", "--out", str(tmp_path / "a"), "-q"])
    assert result.exit_code == 0 and "no price for agent model 'no-such-price'" in result.output
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["models"]["agent"]["price"] is None
    result = runner.invoke(main, ["run", str(notes_case(tmp_path)), "--agent", "careful", "--base-url", server.openai_url])
    assert result.exit_code == 2 and "apply to openai:MODEL" in result.output
    result = runner.invoke(main, ["run", str(notes_case(tmp_path)), "--agent", "careful", "--user", "gpt"])
    assert result.exit_code == 2 and "--user 'gpt'" in result.output
