"""The framework recipes in examples/agents — Pydantic AI and LangGraph (with langchain-mcp-adapters) as
services, the TypeScript MCP SDK as a program per trial — run refunds against the policy model and reach the
in-process reference agents' verdicts and calls, fault cases included (issue 21 item 4). Each framework runs
from its own environment, installed by examples/agents/install-recipes.sh; without it these tests skip,
saying so, unless PASSHAT_REQUIRE_RECIPES=1 (CI), where they fail instead of testing nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.examples.conftest import EXAMPLES, assert_same_as_reference, failures, run_refunds, verdicts

INSTALL = "bash examples/agents/install-recipes.sh"


def missing(what: str) -> None:
    message = f"{what} is not installed ({INSTALL})"
    if os.environ.get("PASSHAT_REQUIRE_RECIPES") == "1":
        pytest.fail(message + "; PASSHAT_REQUIRE_RECIPES=1 says it must be")
    pytest.skip(message)


def recipe_python(recipe: str) -> Path:
    python = EXAMPLES / recipe / ".venv" / "bin" / "python"
    if not python.exists():
        missing(f"the {recipe} recipe's environment ({python.parent.parent})")
    return python


@pytest.fixture
def service(fake_model: Any) -> Iterator[Any]:
    """``start(recipe, model)``: the recipe's ``--serve 0`` in its own environment; returns its /agent URL."""
    started: list[subprocess.Popen[str]] = []

    def start(recipe: str, model: str) -> str:
        env = {**os.environ, "OPENAI_BASE_URL": fake_model.openai_url, "OPENAI_API_KEY": "not-used", "OPENAI_MODEL": model}
        process = subprocess.Popen([str(recipe_python(recipe)), str(EXAMPLES / recipe / "agent.py"), "--serve", "0"],
                                   stdout=subprocess.PIPE, text=True, env=env)
        started.append(process)
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://"), f"the {recipe} service did not start (exit {process.poll()})"
        return url

    yield start
    for process in started:
        process.terminate()
        process.wait(10)


HASTY_FAILS = ["approval-timeout-4812", "email-error-4812", "permission-friend-order"]
"""Three of hasty's failures (a blind retry after a timeout, giving up on an error, a stranger's order): that
a recipe reports the failures its model's decisions cause (careful's run covers every fault path)."""


@pytest.mark.parametrize("recipe", ["pydantic_ai_mcp", "langgraph_mcp"])
@pytest.mark.parametrize("style", ["careful", "hasty"])
def test_a_python_framework_recipe_reaches_the_reference_verdicts(tmp_path: Path, service: Any, reference: dict[str, Any],
                                                                  recipe: str, style: str) -> None:
    if style == "careful":
        records = run_refunds(tmp_path, service(recipe, f"policy-{style}"))
        assert_same_as_reference(records, reference[style], style)
    else:
        records = run_refunds(tmp_path, service(recipe, f"policy-{style}"), cases=HASTY_FAILS)
        assert hasty_failed_as_reference(records, reference)
    assert failures(records) == {}
    assert all(r.usage.input_tokens > 0 for r in records.values())


def hasty_failed_as_reference(records: dict[str, Any], reference: dict[str, Any]) -> bool:
    expected = {case: reference["hasty"][case] for case in HASTY_FAILS}
    return verdicts(records) == verdicts(expected) and {v for v, _ in verdicts(records).values()} == {"fail"}


@pytest.mark.parametrize("recipe", ["pydantic_ai_mcp"])
def test_a_python_framework_recipe_runs_under_cmd_from_its_own_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict[str, Any], recipe: str) -> None:
    """The recipe as a program per trial, its interpreter a virtual environment the sandbox must show; the
    case whose write loses its response is the one the frameworks' defaults fail."""
    monkeypatch.setenv("OPENAI_MODEL", "policy-careful")
    cases = ["refund-4812-drop-response"]
    records = run_refunds(tmp_path, f"cmd:{recipe_python(recipe)} {EXAMPLES / recipe / 'agent.py'}", cases=cases)
    assert failures(records) == {}
    assert verdicts(records) == verdicts({case: reference["careful"][case] for case in cases})


def node_mcp() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH (the TypeScript MCP SDK recipe needs Node 20 or later)")
    if not (EXAMPLES / "node_mcp" / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        missing("the TypeScript MCP SDK (examples/agents/node_mcp/node_modules)")
    return f"cmd:{node} {EXAMPLES / 'node_mcp' / 'agent.mjs'}"


@pytest.mark.parametrize("style", ["careful", "hasty"])
def test_the_typescript_mcp_sdk_recipe_reaches_the_reference_verdicts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict[str, Any], style: str) -> None:
    monkeypatch.setenv("OPENAI_MODEL", f"policy-{style}")
    spec = node_mcp()
    if style == "careful":
        records = run_refunds(tmp_path, spec)
        assert_same_as_reference(records, reference[style], style)
    else:
        records = run_refunds(tmp_path, spec, cases=HASTY_FAILS)
        assert hasty_failed_as_reference(records, reference)
    assert failures(records) == {}
