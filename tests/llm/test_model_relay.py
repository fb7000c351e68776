"""An agent that calls its provider through its own SDK: a stall is an outage, never its fail (issue 25, item 4).

The agent is the real ``openai`` SDK (tests/data/programs/sdk_agent.py), in-process (the relay's URL from
``episode.model_urls``) and as a ``cmd:`` program (``OPENAI_BASE_URL`` in its environment, in the agents'
sandbox where this machine has one), against one local provider for the module that stalls in the way the
model name says (tests/stalling.py). With a 10 s and a 60 s limit, 100 % of the trials are ``error`` and the
run exits 4; a healthy stream passes through unchanged, chunk by chunk. The stall budget is scaled down by
``outages.STALL_SHARE``, as in tests/llm/test_stalls.py, so no test waits seconds.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat import outages
from passhat.cli import main
from passhat.errors import EXIT_INCOMPLETE, PasshatError
from passhat.runner import RunStore
from passhat.serve.model_upstreams import parse_model_upstreams
from passhat.serve.sse import SseEvents
from tests.raw_http import started
from tests.stalling import HEALTHY_TEXT, STALL_MODES, USAGE, StallingProvider, healthy_stream

DATA = Path(__file__).parents[1] / "data"
AGENT = DATA / "programs" / "sdk_agent.py"
WAITED_FOR = {"no_headers": "response headers", "keepalives_only": "stream data after the response headers",
              "one_chunk_then_silence": "further stream data"}


@pytest.fixture(scope="module")
def provider() -> Iterator[StallingProvider]:
    """One provider for the module: the request's model names its mode."""
    with started(StallingProvider) as start:
        yield start("by_model")


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fake key: the SDK needs one, and the relay must pass the agent's own on to the provider."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-relayed")
    return "sk-test-relayed"


def cases(tmp_path: Path, limit_s: int) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir(parents=True, exist_ok=True)
    text = (DATA / "notes" / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(DATA / "notes" / "domain.py"))
    (folder / "c.yaml").write_text(f"{text}limits: {{max_seconds: {limit_s}}}\n")
    return folder


def run(tmp_path: Path, provider: StallingProvider, agent: str, limit_s: int, trials: int, *extra: str) -> Any:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [
        "run", str(cases(tmp_path, limit_s)), "--agent", agent, "--agent-model-relay",
        f"openai=http://127.0.0.1:{provider.port}/v1", "--trials", str(trials), "-j", "1", "--out", str(out),
        "--no-sanity", "--no-report", "-q", *extra])
    return result, RunStore(out).load()


def program(mode: str) -> str:
    return f"cmd:{sys.executable} {AGENT} {mode}"


@pytest.mark.parametrize("limit_s", [10, 60])
@pytest.mark.parametrize("mode", STALL_MODES)
def test_every_stall_an_in_process_sdk_agent_meets_is_an_outage(provider: StallingProvider, key: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch, mode: str,
                                                                limit_s: int) -> None:
    """Was the agent's `fail` (time_limit) at either limit: passhat never saw the model call."""
    monkeypatch.setattr(outages, "STALL_SHARE", 0.3 / limit_s)  # 0.3 s at either limit (see test_stalls.py)
    monkeypatch.setattr(outages, "BREAKER_THRESHOLD", 4)  # 4 stalls before the relay's breaker opens, not 8
    before = provider.requests.get(mode, 0)
    result, records = run(tmp_path, provider, f"{AGENT}:{mode}", limit_s, 5)
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    assert [r.outcome for r in records] == ["error"] * 5
    assert f"model relay openai (POST /chat/completions): the provider stalled — no {WAITED_FOR[mode]} within" \
        in records[0].error
    # 2 trials × 2 attempts stalled (the trial ends at the stall: the SDK's own retry never goes out); then the
    # relay's breaker was open and the later trials did not reach the provider
    assert "circuit open" in records[-1].error
    assert provider.requests[mode] - before <= 4


@pytest.mark.parametrize("limit_s", [10, 60])
@pytest.mark.parametrize("mode", STALL_MODES)
def test_every_stall_a_program_using_the_sdk_meets_is_an_outage(provider: StallingProvider, key: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch, mode: str,
                                                                limit_s: int) -> None:
    """The program's SDK finds the relay in OPENAI_BASE_URL; in the sandbox it reaches it on the tools' socket.
    One trial each: a program importing the SDK costs a second of CPU, and the in-process test above shows the
    repeats (the breaker)."""
    monkeypatch.setattr(outages, "STALL_SHARE", 0.3 / limit_s)
    result, records = run(tmp_path, provider, program(mode), limit_s, 1, "--agent-env", "OPENAI_API_KEY")
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    assert [r.outcome for r in records] == ["error"]
    assert all(f"the provider stalled — no {WAITED_FOR[mode]} within" in r.error for r in records)


def test_a_healthy_stream_reaches_the_sdk_unchanged(provider: StallingProvider, key: str, tmp_path: Path) -> None:
    result, [record] = run(tmp_path, provider, f"{AGENT}:healthy", 10, 1)
    assert record.outcome != "error" and record.end_reason == "completed", record.error
    assert record.reply == "".join(HEALTHY_TEXT)
    assert (record.usage.input_tokens, record.usage.output_tokens) == (USAGE["prompt_tokens"], USAGE["completion_tokens"])
    assert provider.headers[-1]["authorization"] == f"Bearer {key}"  # the agent's own key went on to the provider


def test_a_healthy_stream_reaches_a_program_unchanged(provider: StallingProvider, key: str, tmp_path: Path) -> None:
    result, [record] = run(tmp_path, provider, program("healthy"), 10, 1, "--agent-env", "OPENAI_API_KEY")
    assert record.end_reason == "completed", record.error
    assert record.reply == "".join(HEALTHY_TEXT)
    assert (record.usage.input_tokens, record.usage.output_tokens) == (USAGE["prompt_tokens"], USAGE["completion_tokens"])


def test_a_non_streamed_answer_that_takes_long_is_the_models_latency(provider: StallingProvider, key: str,
                                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without streaming, the headers come only with the whole answer: waiting for them is the model thinking."""
    monkeypatch.setattr(outages, "STALL_SHARE", 0.3 / 10)
    monkeypatch.setattr(provider, "slow_s", 0.6)  # twice the stall budget
    result, [record] = run(tmp_path, provider, f"{AGENT}:slow_unstreamed", 10, 1)
    assert record.end_reason == "completed", record.error
    assert record.reply == "".join(HEALTHY_TEXT)


def test_only_data_events_are_a_sign_of_life() -> None:
    events = SseEvents()
    stream = b": keep-alive\n\nevent: ping\ndata: {}\n\ndata: {\"a\": 1}\n\ndata: x\r\n\r\n: c\r\rdata: y\r\r"
    assert events.feed(stream) == 3
    one_byte_at_a_time = SseEvents()
    assert sum(one_byte_at_a_time.feed(stream[i:i + 1]) for i in range(len(stream))) == 3
    assert sum(SseEvents().feed(part) for part in healthy_stream("m")) == 5  # the keep-alive is not one


@pytest.mark.parametrize(("given", "says"), [
    ("openai", "expected NAME=URL"), ("OpenAI=https://api.openai.com/v1", "expected NAME=URL"),
    ("openai=ftp://x", "http:// or https://"), ("openai=https://k:s@api.openai.com/v1", "credentials"),
])
def test_a_bad_relay_option_is_bad_input_naming_it(given: str, says: str) -> None:
    with pytest.raises(PasshatError, match="--agent-model-relay") as caught:
        parse_model_upstreams([given])
    assert says in str(caught.value)


def evaluate_with(tmp_path: Path, provider: StallingProvider | int, agent: Any, relay: dict[str, str],
                  limit_s: int = 10) -> Any:
    """The same run from Python: ``agent_model_relay=`` as a mapping (``provider``: the server, or a port)."""
    import passhat

    port = provider if isinstance(provider, int) else provider.port
    urls = {name: f"http://127.0.0.1:{port}{path}" for name, path in relay.items()}
    run = passhat.evaluate(str(cases(tmp_path, limit_s)), agent, trials=1, out=tmp_path / "run-py", sanity=False,
                           agent_model_relay=urls)
    return run, RunStore(run.folder).load()


def test_a_stream_is_relayed_chunk_by_chunk_byte_for_byte(provider: StallingProvider, tmp_path: Path) -> None:
    """The provider sends its second half only once the agent has seen the first: a relay that buffered would
    hold the first half back until the provider gave up waiting."""
    import httpx2

    received: list[bytes] = []

    async def agent(episode: Any) -> str:
        async with httpx2.AsyncClient() as http, http.stream(
                "POST", f"{episode.model_urls['openai']}/chat/completions", json={"model": "gated", "stream": True}) as answer:
            async for chunk in answer.aiter_raw():
                received.append(chunk)
                if b"".join(received).startswith(healthy_stream("gated")[0]):
                    provider.gate.set()
        return "done"

    provider.gate.clear()
    run, [record] = evaluate_with(tmp_path, provider, agent, {"openai": "/v1"})
    assert record.end_reason == "completed", record.error
    assert provider.gate_seen is True
    assert b"".join(received) == b"".join(healthy_stream("gated"))  # keep-alive comment included
    assert run.manifest.to_dict()["model_relay"] == {"openai": f"http://127.0.0.1:{provider.port}/v1"}


def anthropic_agent(model: str) -> Any:
    async def agent(episode: Any) -> str:
        import anthropic

        async with anthropic.AsyncAnthropic(base_url=episode.model_urls["anthropic"], api_key="sk-ant-test") as client:
            async with client.messages.stream(model=model, max_tokens=64,
                                              messages=[{"role": "user", "content": "Add a note: call mom."}]) as stream:
                text = "".join([piece async for piece in stream.text_stream])
                final = await stream.get_final_message()
        episode.report_usage(model=model, input_tokens=final.usage.input_tokens, output_tokens=final.usage.output_tokens)
        return text

    return agent


def test_the_anthropic_sdk_through_the_relay(provider: StallingProvider, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A healthy Messages stream keeps its text and usage; one that only pings (Anthropic's keep-alive) stalls."""
    pytest.importorskip("anthropic")
    monkeypatch.setattr(outages, "STALL_SHARE", 0.3 / 10)
    _, [record] = evaluate_with(tmp_path / "healthy", provider, anthropic_agent("healthy_anthropic"), {"anthropic": ""})
    assert record.end_reason == "completed", record.error
    assert record.reply == "".join(HEALTHY_TEXT)
    assert (record.usage.input_tokens, record.usage.output_tokens) == (USAGE["prompt_tokens"], USAGE["completion_tokens"])
    run, [record] = evaluate_with(tmp_path / "pings", provider, anthropic_agent("pings_only"), {"anthropic": ""})
    assert record.outcome == "error"
    assert "model relay anthropic (POST /v1/messages): the provider stalled — no stream data after the response " \
        "headers within" in record.error
    assert run.incomplete(0.25) is not None  # exit 4 under `passhat run`


def test_an_isolated_agent_finds_the_relay_on_its_remote_episode(provider: StallingProvider, key: str,
                                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outages, "STALL_SHARE", 0.3 / 10)
    result, records = run(tmp_path, provider, f"{AGENT}:no_headers", 10, 1, "--isolate", "process", "--agent-env",
                          "OPENAI_API_KEY")
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    assert [r.outcome for r in records] == ["error"] and "no response headers within" in records[0].error


def openai_agent(model: str, **client: Any) -> Any:
    async def agent(episode: Any) -> str:
        import openai

        async with openai.AsyncOpenAI(base_url=episode.model_urls["openai"], api_key="sk-test", **client) as sdk:
            stream = await sdk.chat.completions.create(model=model, stream=True,
                                                       messages=[{"role": "user", "content": "Add a note: call mom."}])
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    return agent


def test_an_agent_that_ends_while_its_provider_refuses_is_an_outage(tmp_path: Path) -> None:
    """Its SDK gave up (here at once: max_retries=0) and the agent failed with it: the provider never answered."""
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = free.getsockname()[1]
    _, [record] = evaluate_with(tmp_path, dead, openai_agent("any", max_retries=0), {"openai": "/v1"})
    assert record.outcome == "error"
    assert "the agent ended while model relay openai was failing: 1 attempt(s) failed, the last with no answer " \
        "from the provider (ConnectError" in record.error


def test_a_5xx_the_sdk_retries_away_is_no_outage(provider: StallingProvider, tmp_path: Path) -> None:
    _, [record] = evaluate_with(tmp_path, provider, openai_agent("unavailable_once"), {"openai": "/v1"})
    assert record.end_reason == "completed", record.error
    assert record.reply == "".join(HEALTHY_TEXT) and provider.requests["unavailable_once"] == 2


def test_requests_and_answers_are_bounded(provider: StallingProvider, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A request past the bound is refused before it is sent; an answer past it is an outage (a broken upstream)."""
    import httpx2

    from passhat.serve import model_relay

    monkeypatch.setattr(model_relay, "MAX_REQUEST_BYTES", 2000)
    monkeypatch.setattr(model_relay, "MAX_RESPONSE_BYTES", 300)  # the healthy stream is ~1 KB
    statuses: list[int] = []

    async def agent(episode: Any) -> str:
        url = f"{episode.model_urls['openai']}/chat/completions"
        async with httpx2.AsyncClient() as http:
            statuses.append((await http.post(url, json={"model": "healthy", "padding": "x" * 3000})).status_code)
            async with http.stream("POST", url, json={"model": "healthy", "stream": True}) as answer:
                statuses.append(answer.status_code)
                async for _ in answer.aiter_raw():
                    pass
        return "done"

    before = provider.requests.get("healthy", 0)
    _, [record] = evaluate_with(tmp_path, provider, agent, {"openai": "/v1"})
    # the runner's retry of the trial asked again; whether the stream's 200 head reached the agent before the
    # outage ended its trial is a race the runner may win (it ends the trial at once)
    assert statuses.count(413) == 2 and set(statuses) <= {413, 200} and statuses[0] == 413
    assert provider.requests.get("healthy", 0) - before == 2  # the streamed calls only: the big one never left
    assert record.outcome == "error" and "the provider's answer is larger than" in record.error
