"""Running the example agents (examples/agents) against the policy model, offline."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from passhat.testing.fake_models import FakeModelServer
from passhat.testing.policy_model import policy_model

EXAMPLES = Path(__file__).parents[2] / "examples" / "agents"
STYLES = ("careful", "hasty")
REPRESENTATIVE = ["refund-4812", "order-number-on-request-4840", "already-refunded-4860", "approval-malformed-4812",
                  "approval-timeout-4812", "email-drop-4870", "email-error-4812", "over-amount-4830",
                  "permission-friend-order", "refund-4850-holdout"]
"""The refunds cases the examples run (10 of 16): a plain refund, one that asks the user, one case per fault
kind the suite plans (malformed, timeout, a response lost after a write, an error, latency) and one per
failure category the hasty reference shows. The other six repeat those paths (another timeout, other
phrasings of 4812) at 60 % more CPU; test_the_examples_cases_cover_the_suite holds the subset to this."""
TOOL_TIMEOUT_S = 2.0
"""How long the examples wait for a tool in these tests (see ``example_environment``)."""


@pytest.fixture(scope="session")
def fake_model() -> Iterator[FakeModelServer]:
    """The policy model on a local port: model ``policy-careful`` plays careful, ``policy-hasty`` plays hasty."""
    with FakeModelServer(policy_model()) as server:
        yield server


@pytest.fixture(autouse=True)
def example_environment(monkeypatch: pytest.MonkeyPatch, fake_model: FakeModelServer) -> None:
    """What the examples read: the model endpoint (never a real provider), and a short tool timeout so a
    withheld answer (a planned timeout or lost response) costs 2 s instead of a production client's 15
    (shorter makes the verdicts depend on the machine: under load a real answer took longer than 1 s)."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_model.openai_url)
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    monkeypatch.setenv("PASSHAT_TOOL_TIMEOUT_S", str(TOOL_TIMEOUT_S))
    monkeypatch.delenv("OPENAI_MODEL", raising=False)


def run_refunds(tmp_path: Path, spec: str, *, cases: list[str] | None = REPRESENTATIVE,
                concurrency: int = 4) -> dict[str, Any]:
    """One trial of each of ``cases`` (:data:`REPRESENTATIVE`; ``None``: every refunds case) with the agent
    ``spec`` through the real runner."""
    from passhat.agents import load_agent
    from passhat.agents.confined import AgentSandbox
    from passhat.cases import load_suite
    from passhat.llm.pricing import load_price_table
    from passhat.runner import RunConfig, RunStore, execute
    from passhat.suites.select import subset

    out = tmp_path / f"run-{len(list(tmp_path.glob('run-*')))}"
    # a program's sandbox lets through only what is named: the model's variables and the model's host
    model = urlsplit(os.environ.get("OPENAI_BASE_URL", ""))
    sandbox = AgentSandbox(env=("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"),
                           allow_hosts=(f"{model.hostname}:{model.port}",) if model.port else ())
    agent = load_agent(spec, prices=load_price_table(None), sandbox=sandbox)
    suite = load_suite("refunds") if cases is None else subset(load_suite("refunds"), cases)
    cfg = RunConfig(suite=suite, agent=agent, agent_spec=spec, trials=1, out=out, concurrency=concurrency)
    asyncio.run(execute(cfg))
    return {r.case_id: r for r in RunStore(out).load()}


def verdicts(records: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """Per case: outcome and failure category — what must not depend on how the agent is built or run."""
    return {case: (r.outcome, r.failure.category if r.failure else None) for case, r in records.items()}


def decisions(records: dict[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    """Per case: the tool calls made, in order (name and arguments; 88 and 88.0 compare equal)."""
    return {case: [(c.tool, c.arguments) for c in r.calls] for case, r in records.items()}


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The in-process reference agents' records on refunds, per style (run once per session)."""
    return {style: run_refunds(tmp_path_factory.mktemp(f"reference-{style}"), style, cases=None) for style in STYLES}


def assert_same_as_reference(records: dict[str, Any], reference: dict[str, Any], style: str) -> None:
    reference = {case: reference[case] for case in records}
    assert set(records) == set(REPRESENTATIVE)
    assert verdicts(records) == verdicts(reference)
    assert decisions(records) == decisions(reference)
    outcomes = {outcome for outcome, _ in verdicts(records).values()}
    assert outcomes == ({"pass"} if style == "careful" else {"pass", "fail"})


def failures(records: dict[str, Any]) -> dict[str, str | None]:
    return {case: r.error for case, r in records.items() if r.end_reason != "completed"}
