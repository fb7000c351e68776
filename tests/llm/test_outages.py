"""An outage is never the agent's failure (issue 10, item 1): retries that outlast the trial, streams that
stall or carry non-JSON data end as `error`; a dead provider is found fast; a mostly-error run exits 4."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat import outages
from passhat.agents.model import model_agent
from passhat.cases import load_suite
from passhat.cli import main
from passhat.llm import RetryPolicy
from passhat.runner import RunConfig, RunStore, execute
from passhat.runner.health import EXIT_INCOMPLETE
from passhat.testing.fake_models import FakeRequest, ToolUse, Turn

NOTES = Path(__file__).parents[1] / "data" / "notes"
DONE = "###DONE###"


def notes_cases(tmp_path: Path, extra: str) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    text = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))
    (folder / "add-note.yaml").write_text(text + extra)
    return folder


def good_turns(req: FakeRequest) -> Turn:
    if req.turn == 0:
        return Turn(tool_calls=[ToolUse("add_note", {"title": "call mom", "priority": 2})])
    return Turn(text=f"I added the note. {DONE}")


def run(cases: Path, server: Any, retry: RetryPolicy, tmp_path: Path, trials: int = 1) -> list[Any]:
    agent = model_agent("openai:scripted-model", base_url=server.openai_url, retry=retry)
    out = tmp_path / f"run-{time.monotonic_ns()}"
    cfg = RunConfig(suite=load_suite(str(cases)), agent=agent, agent_spec="openai:scripted-model", trials=trials, out=out)
    asyncio.run(execute(cfg))
    return RunStore(out).load()


def test_retries_that_would_outlast_the_time_limit_end_the_trial_as_an_outage(serve: Any, tmp_path: Path) -> None:
    """The default backoff (1 + 2 + 4 + 8 + 16 s) against a 2 s limit used to end as the agent's time_limit."""
    server = serve(lambda req: Turn(always=503, text="overloaded"))
    recs = run(notes_cases(tmp_path, "limits: {max_seconds: 2}\n"), server, RetryPolicy(jitter=0.0), tmp_path)
    assert [(r.outcome, r.end_reason, r.attempt) for r in recs] == [("error", "harness_error", 2)]
    assert "still failing after 1 attempt(s)" in recs[0].error and "503" in recs[0].error
    assert "a retry in 1.0s would not fit in the" in recs[0].error
    # gave up when the next retry could not fit, twice (the runner's retry): one request each, no backoff waited
    assert len(server.requests) == 2


def test_a_stream_that_stalls_mid_answer_past_the_limit_is_an_outage(serve: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outages, "STALL_S", 0.3)
    server = serve(lambda req: Turn(text=f"I added the note. {DONE}", stall_s=3.0))
    recs = run(notes_cases(tmp_path, "limits: {max_seconds: 1}\n"), server, RetryPolicy(attempts=1), tmp_path)
    assert recs[0].outcome == "error" and "no further stream data within" in recs[0].error


def test_no_response_headers_for_a_third_of_the_remaining_time_is_an_outage(serve: Any, tmp_path: Path) -> None:
    """Was the agent's `fail` (time_limit): waiting for the first byte counted as the model's latency, however long
    (issue 25, item 4; the three stall modes at 10 s and 60 s are tests/llm/test_stalls.py)."""
    server = serve(lambda req: Turn(text=f"I added the note. {DONE}", delay_s=3.0))
    recs = run(notes_cases(tmp_path, "limits: {max_seconds: 1}\n"), server, RetryPolicy(attempts=1), tmp_path)
    assert (recs[0].outcome, recs[0].end_reason) == ("error", "harness_error")
    assert "no response headers within" in recs[0].error


def test_non_json_stream_data_is_retried_and_then_an_outage(serve: Any, tmp_path: Path) -> None:
    server = serve(lambda req: Turn(text=f"I added the note. {DONE}", garbage=True))
    fast = RetryPolicy(attempts=3, base_delay_s=0.001, max_delay_s=0.01, jitter=0.0)
    recs = run(notes_cases(tmp_path, ""), server, fast, tmp_path)
    assert recs[0].outcome == "error" and "still failing after 3 attempts" in recs[0].error
    assert len(server.requests) == 6  # 3 attempts, and the runner's one retry of the trial


def test_a_dead_provider_is_found_fast_and_the_run_exits_incomplete(serve: Any, tmp_path: Path) -> None:
    server = serve(lambda req: Turn(always=503, text="no healthy upstream"))
    cases = notes_cases(tmp_path, "")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(cases), "--agent", "openai:scripted-model", "--base-url", server.openai_url,
                                  "--trials", "12", "-j", "4", "--retry-delay", "0.001", "--out", str(out),
                                  "--no-sanity", "--no-report", "-q"])
    assert r.exit_code == EXIT_INCOMPLETE, r.output
    [said] = [line for line in r.output.splitlines() if line.startswith("incomplete run: ")]
    assert said.startswith("incomplete run: 12 of 12 trial(s) (100%) ended in infrastructure errors")
    assert "circuit open" in said and said.endswith("(exit 4)")
    recs = RunStore(out).load()
    assert [r.outcome for r in recs] == ["error"] * 12
    # 12 trials × 2 runner attempts × 6 retries would be 144 requests; the breaker stops after a handful
    assert len(server.requests) <= 16


@pytest.mark.parametrize(("max_error_rate", "code"), [("0.25", 0), ("0.2", EXIT_INCOMPLETE)])
def test_the_error_share_that_makes_a_run_incomplete_is_the_users_to_set(serve: Any, tmp_path: Path,
                                                                          max_error_rate: str, code: int) -> None:
    outage = {"left": 2}  # the first trial's two attempts meet an outage; the other three trials run fine

    def script(req: FakeRequest) -> Turn:
        if outage["left"] > 0:
            outage["left"] -= 1
            return Turn(always=503, text="overloaded")
        return good_turns(req)

    server = serve(script)
    r = CliRunner().invoke(main, ["run", str(notes_cases(tmp_path, "")), "--agent", "openai:scripted-model",
                                  "--base-url", server.openai_url, "--trials", "4", "-j", "1", "--retries", "1",
                                  "--max-error-rate", max_error_rate, "--out", str(tmp_path / "run"), "--no-sanity",
                                  "--no-report", "-q"])
    assert r.exit_code == code, r.output
    assert [rec.outcome for rec in RunStore(tmp_path / "run").load()] == ["error", "pass", "pass", "pass"]
