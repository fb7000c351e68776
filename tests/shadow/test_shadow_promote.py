"""``passhat shadow promote``: a conversation becomes a regression case that loads, lints and passes with the
agent whose writes it expects; and candidates that crash or fail to run are reported, not fatal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import passhat
from passhat.cases import load_suite
from passhat.cli import main
from passhat.models import ShadowReport
from passhat.shadow import promote, shadow
from tests.shadow.conftest import Traffic


@pytest.fixture(scope="module")
def shadows(traffic: dict[str, Traffic], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("shadows")
    shadow([traffic["careful"].jsonl], "careful", domain="refunds", out=root / "careful")
    shadow([traffic["careful"].otlp], "hasty", domain="refunds", out=root / "hasty")
    return {"careful": root / "careful", "hasty": root / "hasty"}


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


def pass_rates(cases: Path, agent: str, out: Path) -> dict[str, float]:
    run = passhat.evaluate(str(cases), agent, trials=2, out=out, sanity=False, on_warning=lambda _: None)
    return {c.id: c.successes / c.n for c in run.summary.cases}


def test_promoted_conversations_load_lint_and_pass_with_the_agent_production_ran(shadows: dict[str, Path],
                                                                                 tmp_path: Path) -> None:
    cases = tmp_path / "suite" / "cases"
    ids = ["refund-4812-t0", "order-number-on-request-4840-t1", "refund-4812-drop-response-t0", "email-drop-4870-t1",
           "approval-timeout-4812-t0"]
    for cid in ids:
        r = invoke("shadow", "promote", shadows["careful"], cid, "--to", cases)
        assert r.exit_code == 0, r.output
    suite = load_suite(str(cases))
    assert sorted(c.id for c in suite.cases) == sorted(ids)
    lost = suite.case("refund-4812-drop-response-t0")
    assert lost.split == "regression" and lost.tags["source"] == "shadow" and lost.user.identity == "C-1001"
    assert [(f.tool, f.kind) for f in lost.faults] == [("issue_refund", "drop_response")]
    assert [c.tool for c in lost.reference] == ["issue_refund", "send_email"]
    assert suite.case("order-number-on-request-4840-t1").user.turns[0].say == "Oh sorry - it's order 4840, the yoga mat."
    lint = invoke("cases", "lint", cases)
    assert lint.exit_code == 0, lint.output
    assert pass_rates(cases, "careful", tmp_path / "careful") == dict.fromkeys(ids, 1.0)
    hasty = pass_rates(cases, "hasty", tmp_path / "hasty")  # the regression cases catch the blind retries
    assert hasty["refund-4812-drop-response-t0"] == hasty["email-drop-4870-t1"] == 0.0


def test_expect_candidate_takes_the_candidates_writes(shadows: dict[str, Path], tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    file = promote(shadows["hasty"], "refund-4812-drop-response-t0", cases, expect="candidate")
    data = yaml.safe_load(file.read_text())
    assert [c["tool"] for c in data["reference"]] == ["issue_refund", "issue_refund", "send_email"]
    assert "candidate's writes in trial 0" in data["description"]
    assert pass_rates(cases, "hasty", tmp_path / "h") == {"refund-4812-drop-response-t0": 1.0}
    assert pass_rates(cases, "careful", tmp_path / "c") == {"refund-4812-drop-response-t0": 0.0}


def test_promote_refuses_what_it_cannot_do(shadows: dict[str, Path], tmp_path: Path) -> None:
    unknown = invoke("shadow", "promote", shadows["careful"], "no-such-conversation", "--to", tmp_path)
    assert unknown.exit_code == 2 and "no conversation 'no-such-conversation'; it has: " in unknown.output
    assert "refund-4812-t0" in unknown.output
    assert invoke("shadow", "promote", tmp_path, "x", "--to", tmp_path / "c").exit_code == 2  # not a shadow folder
    twice = [invoke("shadow", "promote", shadows["careful"], "refund-4812-t0", "--to", tmp_path / "c") for _ in range(2)]
    assert twice[0].exit_code == 0 and twice[1].exit_code == 2 and "already exists" in twice[1].output
    trial = invoke("shadow", "promote", shadows["careful"], "refund-4812-t0", "--to", tmp_path / "d", "--trial", "0")
    assert trial.exit_code == 2 and "--expect candidate" in trial.output


def test_a_crashing_candidate_is_reported_and_the_run_goes_on(traffic: dict[str, Traffic], tmp_path: Path) -> None:
    (tmp_path / "crashy.py").write_text(
        "from passhat.agents.reference.refunds import play\n\n"
        "async def agent(episode):\n"
        "    if 'blender' in episode.instruction:\n"
        "        raise RuntimeError('candidate crashed on the blender')\n"
        "    return await play(episode, 'careful')\n")
    r = invoke("shadow", traffic["careful"].jsonl, "--agent", f"{tmp_path / 'crashy.py'}:agent", "--domain", "refunds",
               "--out", tmp_path / "s")
    assert r.exit_code == 1, r.output
    report = ShadowReport.load(tmp_path / "s" / "shadow.json")
    crashed = {c.id for c in report.conversations if c.status == "diverges"}
    assert crashed == traffic["careful"].ids("store-credit-4820")
    for c in report.conversations:
        if c.id in crashed:
            [t] = c.trials
            assert t.end_reason == "agent_error" and t.problem == "RuntimeError: candidate crashed on the blender"
            assert [w.tool for w in t.missing] == ["issue_refund", "send_email"] and "missing" in c.kinds
    assert "RuntimeError: candidate crashed on the blender" in " ".join(r.output.split())
    assert sum(c.status == "same" for c in report.conversations) == 10  # every other conversation still ran
