"""The real checkout's shape: airline has only test tasks, some tasks have no gold actions, users carry
e-mail addresses and phone numbers. Import, lint, gold replay and re-grade must all hold on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_tau_run import gold, replay

from passhat import evaluate
from passhat.cli import main
from passhat.regrade.run import regrade_run
from passhat.runner.store import RunStore


@pytest.fixture
def dev(checkout: Path, tmp_path: Path) -> tuple[Path, str]:
    out = tmp_path / "dev"
    r = CliRunner().invoke(main, ["cases", "import", "--format", "tau-bench", str(checkout), "--out", str(out),
                                  "--tasks", "dev"])
    assert r.exit_code == 0, r.output
    return out, r.output


def test_a_split_an_environment_lacks_is_skipped_with_a_note(dev: tuple[Path, str]) -> None:
    out, printed = dev
    assert "note: airline: skipped, it has no tasks_dev.py (its task files: tasks_test.py)" in printed
    assert sorted(p.name for p in out.iterdir()) == ["retail"]


def test_a_task_without_actions_means_nothing_may_change_and_lints_clean(dev: tuple[Path, str]) -> None:
    out, _ = dev
    r = CliRunner().invoke(main, ["cases", "lint", str(out / "retail" / "cases"), "--json"])
    assert r.exit_code == 0, r.output
    assert [f for f in json.loads(r.output)["findings"] if f["severity"] == "error"] == []
    text = (out / "retail" / "cases" / "retail-dev-000.yaml").read_text()
    assert "unchanged_except: {}" in text and "expect_state" not in text


def test_gold_replay_passes_and_a_regrade_reproduces_every_verdict(dev: tuple[Path, str], tmp_path: Path) -> None:
    out, _ = dev
    suite = out / "retail"

    def wrong(case: str, calls: Any, outputs: list[str]) -> Any:  # the no-action task: a write it must not make
        extra = [("cancel_pending_order", {"order_id": "#W0000004", "reason": "no longer needed"})]
        return (calls + extra if not calls else calls), " ".join(outputs)  # "327 1000 1786" reads as a phone number

    runs = {}
    for name, agent in (("gold", replay(suite)), ("wrong", replay(suite, wrong))):
        runs[name] = evaluate(suite / "cases", agent, trials=2, concurrency=2, out=tmp_path / name, sanity=False)
    verdicts = {r.case_id: r.outcome for r in runs["gold"].records()}
    assert set(verdicts.values()) == {"pass"} and set(verdicts) == set(gold(suite))
    assert {r.case_id: r.outcome for r in runs["wrong"].records()}["retail-dev-000"] == "fail"
    for name in runs:
        report = regrade_run(tmp_path / name, tmp_path / f"{name}-regraded")
        assert report.trials == 4 and report.outcome_changes == [], name
    records = list(RunStore(tmp_path / "gold").iter_records())
    assert any("[REDACTED:" in json.dumps(r.diff) for r in records)  # the stored diffs were redacted


def test_the_imported_suite_switches_off_the_loop_and_unknown_tool_vetoes(dev: tuple[Path, str], tmp_path: Path) -> None:
    out, _ = dev
    suite = out / "retail"

    async def sloppy(episode: Any) -> str:
        await episode.call("lookup_everything", {})  # no such tool: τ-bench answers with an error
        for _ in range(3):
            await episode.call("get_order_details", {"order_id": "#W0000004"})
        return "Your order is pending."

    rec = next(iter(evaluate(suite / "cases", sloppy, trials=1, out=tmp_path / "sloppy", cases=("retail-dev-000",),
                             sanity=False).records()))
    grades = {g.name: g for g in rec.grades}
    assert rec.outcome == "pass"
    assert not grades["no_loop"].passed and not grades["no_loop"].required
    assert not grades["no_unknown_tools"].passed and not grades["no_unknown_tools"].required
