"""Per-model rate limits (issue 13): the trials of a run share one limit, a 429 slows every one of them, a
wait that would outlast the trial is an infrastructure error, and a bad ``--rate-limit`` is bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import passhat
from passhat import outages
from passhat.cli import main
from passhat.errors import InfrastructureError, PasshatError
from passhat.llm import chat_model
from passhat.llm.chat import CallOptions, ChatMessage
from passhat.llm.ratelimit import Buckets, Limiter, LocalLedger, RateLimit, estimate_tokens, parse_option
from passhat.runner import RunStore
from passhat.testing.fake_models import FakeRequest, ToolUse, Turn, busiest_window
from tests.llm.helpers import FAST, notes_case

DONE = "###DONE###"
pytestmark = pytest.mark.filterwarnings("ignore:no price for agent model")  # the fake model has no price


def two_turns(req: FakeRequest) -> Turn:
    if req.turn == 0:
        return Turn(tool_calls=[ToolUse("add_note", {"title": "call mom", "priority": 2})])
    return Turn(text=f"I added the note. {DONE}")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def go_times(buckets: Buckets, clock: Clock, n: int, tokens: int = 0) -> list[float]:
    """Reserve ``n`` calls at once; when each may go."""
    return [clock.now + buckets.reserve(tokens) for _ in range(n)]


def most_in(times: list[float], window: float) -> int:
    return max(sum(1 for u in times if t <= u < t + window) for t in times)


def test_no_window_sees_more_requests_than_the_limit() -> None:
    clock = Clock()
    buckets = Buckets(RateLimit(60), clock)
    times = go_times(buckets, clock, 200)
    assert times[0] == clock.now  # the first call goes at once
    assert most_in(times, 60.0) == 60  # any minute: the limit, not the limit plus a burst
    assert times[-1] - times[0] == pytest.approx(199 * 60 / 59)


def test_tokens_are_reserved_then_settled_with_what_the_reply_used() -> None:
    clock = Clock()
    buckets = Buckets(RateLimit(1000, tokens=6000), clock)  # 100 tokens of burst, then 98.3 a second
    assert buckets.reserve(1100) == pytest.approx(1000 / (5900 / 60))
    buckets.settle(1100, 100)  # the reply used far less than the estimate: the debt is given back
    assert buckets.reserve(100) == pytest.approx(100 / (5900 / 60))
    assert estimate_tokens({"messages": [{"content": "x" * 400}], "max_tokens": 50}) == 50 + len(
        json.dumps({"messages": [{"content": "x" * 400}], "max_tokens": 50})) // 4


def test_a_429_halves_the_rate_holds_everyone_for_retry_after_and_recovers_gradually() -> None:
    clock = Clock()
    buckets = Buckets(RateLimit(60), clock)
    buckets.reserve(0)
    clock.now += 10
    buckets.throttled(retry_after=5.0)
    buckets.throttled(retry_after=5.0)  # the same burst of 429s: one cut, not two
    assert buckets.scale == 0.5 and buckets.throttles == 2
    first, second = go_times(buckets, clock, 2)
    assert first - clock.now >= 5.0  # nobody goes before the Retry-After
    assert second - first == pytest.approx(2 * 60 / 59)  # at half the rate
    for _ in range(10):
        buckets.succeeded()
    assert buckets.scale == pytest.approx(1.0)


def test_a_429_from_the_server_slows_every_model_sharing_the_limit(serve: Any) -> None:
    server = serve(lambda req: Turn(text="ok", errors=[429] if req.last_user_text == "hello" else [], retry_after=0.05))
    limiter = Limiter(RateLimit(6000, window_s=60.0))
    agent, judge = (chat_model("openai:scripted-model", base_url=server.openai_url, retry=FAST) for _ in range(2))
    agent.limiter = judge.limiter = limiter  # type: ignore[attr-defined]
    ledger = limiter.ledger
    assert isinstance(ledger, LocalLedger)

    async def call(model: Any, text: str) -> str:
        reply = await model.complete("", [ChatMessage("user", text)], [], CallOptions())
        return str(reply.text)

    assert asyncio.run(call(agent, "hello")) == "ok"  # the 429, then the answer
    assert ledger.buckets.throttles == 1 and ledger.buckets.scale < 1.0
    slowed = ledger.buckets.scale
    assert asyncio.run(call(judge, "again")) == "ok"
    assert ledger.buckets.scale > slowed  # the judge's success is counted in the same limit
    assert [r.last_user_text for r in server.requests] == ["hello", "hello", "again"]


def test_many_concurrent_trials_never_exceed_the_limit_in_any_window(serve: Any, tmp_path: Path) -> None:
    server = serve(two_turns)
    limit = RateLimit(10, window_s=2.0)  # 16 requests need more than one window
    run = passhat.evaluate(notes_case(tmp_path), "openai:scripted-model", base_url=server.openai_url, trials=8,
                           concurrency=8, out=tmp_path / "run", sanity=False, rate_limits={"scripted-model": limit})
    assert [r.outcome for r in run.records()] == ["pass"] * 8
    assert len(server.requests) == 16
    assert busiest_window(server.requests, 2.0) <= 10
    assert run.manifest.to_dict()["rate_limits"] == {"scripted-model": {"requests": 10, "tokens": None, "window_s": 2.0}}


def test_a_wait_longer_than_the_trials_time_limit_is_an_error_not_a_fail(serve: Any, tmp_path: Path) -> None:
    server = serve(two_turns)
    folder = notes_case(tmp_path, limits={"max_seconds": 2})
    run = passhat.evaluate(folder, "openai:scripted-model", base_url=server.openai_url, trials=1, out=tmp_path / "run",
                           sanity=False, rate_limits={"scripted-model": "2"})  # the second call waits ~a minute
    [record] = run.records()
    assert (record.outcome, record.end_reason) == ("error", "harness_error")
    assert "rate limit (2 requests per min) would hold this call" in (record.error or "")
    assert "left of the trial's time limit" in (record.error or "")


def test_a_time_limit_reached_while_waiting_for_a_permit_is_the_providers() -> None:
    watch = outages.TrialWatch(None)
    with watch.call("openai:m") as call:
        call.held = "openai:m was held by the rate limit (1 requests per min) for 30.0s"
        assert watch.blame() == call.held


def test_a_wait_that_cannot_fit_gives_its_reservation_back() -> None:
    limiter = Limiter(RateLimit(2))
    ledger = limiter.ledger
    assert isinstance(ledger, LocalLedger)

    async def two_calls() -> None:
        with outages.watching(deadline=outages.time.monotonic() + 5):
            await limiter.acquire("openai:m", 0)
            with pytest.raises(InfrastructureError, match="would hold this call"):
                await limiter.acquire("openai:m", 0)

    asyncio.run(two_calls())
    assert ledger.buckets.requests.level == pytest.approx(0.0, abs=0.01)  # only the call that went is counted


@pytest.mark.parametrize(("option", "says"), [
    ("gpt-4o=fast", "--rate-limit gpt-4o=fast: expected MODEL=RPM or MODEL=RPM/TPM"),
    ("gpt-4o=0", "--rate-limit gpt-4o=0: the model must be named and the limits be > 0"),
    ("scripted-model", "--rate-limit 'scripted-model': expected MODEL=RPM"),
    ("gpt4o=500", "--rate-limit gpt4o: no model of this run is called 'gpt4o' (its models: openai:scripted-model)"),
])
def test_a_bad_rate_limit_is_bad_input_before_any_trial(serve: Any, tmp_path: Path, option: str, says: str) -> None:
    server = serve(two_turns)
    r = CliRunner().invoke(main, ["run", str(notes_case(tmp_path)), "--agent", "openai:scripted-model",
                                  "--base-url", server.openai_url, "--rate-limit", option, "--out", str(tmp_path / "run")])
    assert r.exit_code == 2, r.output
    assert says in " ".join(r.output.split())
    assert server.requests == [] and not (tmp_path / "run" / "trials.jsonl").exists()


def test_the_option_accepts_model_names_with_colons_and_provider_prefixes(serve: Any, tmp_path: Path) -> None:
    assert parse_option(("ft:gpt-4o:acme=500/30000",)) == {"ft:gpt-4o:acme": "500/30000"}
    assert RateLimit.parse("m", "500/30000") == RateLimit(500, 30000)
    with pytest.raises(PasshatError, match="--rate-limit m=-1"):
        RateLimit.parse("m", "-1")
    server = serve(two_turns)
    r = CliRunner().invoke(main, ["run", str(notes_case(tmp_path)), "--agent", "openai:scripted-model", "-k", "2",
                                  "--base-url", server.openai_url, "--rate-limit", "openai:scripted-model=600/100000",
                                  "--out", str(tmp_path / "run"), "-q", "--no-report"])
    assert r.exit_code == 0, r.output
    assert [rec.outcome for rec in RunStore(tmp_path / "run").load()] == ["pass", "pass"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["rate_limits"] == {"openai:scripted-model": {"requests": 600, "tokens": 100000, "window_s": 60.0}}
