"""A provider that accepts and then stalls is an outage, never the agent's fail (issue 25, item 4).

Each stall mode against a real HTTP server on 127.0.0.1: no response headers; 200 and only SSE
keep-alives; one chunk and then silence. With a 10 s and a 60 s trial limit, 100 % of the trials are
``error`` and the run exits 4; the attempts count toward the circuit breaker. The stall budget is a share of
the trial's remaining time (passhat/outages.py), scaled down here so no test waits seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat import outages
from passhat.cli import main
from passhat.errors import EXIT_INCOMPLETE
from passhat.runner import RunStore
from tests.raw_http import started
from tests.stalling import STALL_MODES, StallingProvider

NOTES = Path(__file__).parents[1] / "data" / "notes"
MODES = STALL_MODES


@pytest.fixture
def stalling() -> Iterator[Any]:
    with started(StallingProvider) as start:
        yield start


@pytest.mark.parametrize("limit_s", [10, 60])
@pytest.mark.parametrize("mode", MODES)
def test_every_stall_mode_is_an_outage_at_any_limit(stalling: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    mode: str, limit_s: int) -> None:
    # 0.3 s of the remaining time at either limit (the default third would be 3.3 s and 20 s): short enough
    # that no test waits long, long enough that a loaded machine's server sends its headers in time, so the
    # stall is seen at the stage the mode stalls at
    monkeypatch.setattr(outages, "STALL_SHARE", 0.3 / limit_s)
    monkeypatch.setattr(outages, "BREAKER_THRESHOLD", 4)  # 4 stalls of 0.3 s before it opens, not 8
    server = stalling(mode)
    cases = tmp_path / "cases"
    cases.mkdir()
    text = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))
    (cases / "c.yaml").write_text(f"{text}limits: {{max_seconds: {limit_s}}}\n")
    out = tmp_path / "run"
    port = server.port
    result = CliRunner().invoke(main, [
        "run", str(cases), "--agent", "openai:stalling-model", "--base-url", f"http://127.0.0.1:{port}/v1",
        "--trials", "5", "-j", "1", "--retries", "1", "--out", str(out), "--no-sanity", "--no-report", "-q"])
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    records = RunStore(out).load()
    assert [r.outcome for r in records] == ["error"] * 5
    waited_for = "response headers" if mode == "no_headers" else (
        "stream data after the response headers" if mode == "keepalives_only" else "further stream data")
    assert f"no {waited_for} within" in records[0].error
    # 2 trials × 2 attempts stalled; then the breaker was open and the later trials did not reach the provider
    assert "circuit open" in records[-1].error and server.total <= 4


def test_the_stall_budget_is_a_third_of_the_remaining_time_at_most_30_s() -> None:
    with outages.watching(None):
        assert outages.stall_budget() == outages.STALL_CAP_S == 30.0
    import time

    deadline = time.monotonic() + 9.0
    with outages.watching(deadline):
        before = time.monotonic()
        budget = outages.stall_budget()
        after = time.monotonic()
    assert outages.STALL_SHARE == 1 / 3  # a third of what was left, however long this took to ask
    assert outages.STALL_SHARE * (deadline - after) <= budget <= outages.STALL_SHARE * (deadline - before)
    with outages.watching(time.monotonic() + 600.0):
        assert outages.stall_budget() == 30.0

