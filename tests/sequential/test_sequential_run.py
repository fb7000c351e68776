"""``passhat run --gate FILE --sequential``: rounds, looks, stopping, resume and refusals, on real runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import passhat.api
from passhat.api import Progress
from passhat.errors import PasshatError
from passhat.gate import evaluate_gate
from passhat.sequential.design import Sequential
from tests.conftest import PLANNED_AGENTS

CAND = f"{PLANNED_AGENTS}:cand"


def gate(tmp_path: Path, *rules: str, name: str = "gate.yaml") -> Path:
    path = tmp_path / name
    path.write_text("name: seq\nrules:\n" + "".join(f"  - {r}\n" for r in rules))
    return path


def keys(folder: Path) -> list[tuple[str, int]]:
    return [(r["case_id"], r["trial"]) for r in map(json.loads, (folder / "trials.jsonl").read_text().splitlines())]


def test_a_sequential_run_stops_at_the_look_that_decides_and_records_why(cli: Any, write_suite: Any,
                                                                         tmp_path: Path) -> None:
    suite = write_suite({f"c{i:02d}": "cand=p" for i in range(12)})
    out = tmp_path / "run"
    result = cli("run", suite, "--agent", CAND, "--gate", gate(tmp_path, "pass_hat_k: {k: 1, min: 0.3}"),
                 "--sequential", "--looks", "2,4,8", "--out", out, "-q", "--no-sanity", "--no-report")
    assert result.exit_code == 0, result.output
    assert "stopped at look 1 of 3 (2 trials per case): every rule was decided; 72 of 96 trials saved" in result.output
    assert sorted(keys(out)) == [(f"c{i:02d}", t) for i in range(12) for t in range(2)]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["trials"] == 8 and manifest["status"] == "complete"
    stopped = manifest["sequential"]["stopped"]
    assert {k: stopped[k] for k in ("look", "trials_per_case", "reason", "trials_run", "trials_saved")} == {
        "look": 1, "trials_per_case": 2, "reason": "decided", "trials_run": 24, "trials_saved": 72}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["suite"]["trials_per_case"] == 2 and summary["sequential"]["stopped"]["reason"] == "decided"
    assert summary["suite"]["confidence"] == pytest.approx(stopped["confidence"]) and stopped["confidence"] > 0.95
    verdict = json.loads((out / "gate.json").read_text())
    assert verdict["sequential"]["stopped"] == stopped  # the same record in the manifest and gate.json
    assert stopped["fixed_design_trials"] == 96 and stopped["outcome"] == "PASS"
    # gating it again is a replay of its looks, not a new look: same verdict, nothing refused
    again = cli("gate", out)
    assert again.exit_code == 0, again.output
    assert json.loads((out / "gate.json").read_text())["rules"] == verdict["rules"]
    looks = [json.loads(line) for line in (out / "gate-looks.jsonl").read_text().splitlines()]
    assert [(e["source"], e["sequential_look"], e["stopped"]) for e in looks] == [
        ("passhat run", 1, "decided"), ("passhat gate", 1, "decided")]


def test_a_failed_trial_of_a_never_fails_rule_stops_the_run_at_once(cli: Any, write_suite: Any, tmp_path: Path) -> None:
    suite = write_suite({"c1": "cand=p", "c2": "cand=p", "perm": "cand=pf"}, tags={"perm": {"scenario": "permission"}})
    out = tmp_path / "run"
    rules = ("never_fails: {select: {tags: {scenario: permission}}}", "pass_hat_k: {k: 1, min: 0.99}")
    result = cli("run", suite, "--agent", CAND, "--gate", gate(tmp_path, *rules), "--sequential", "--looks", "2,4",
                 "--out", out, "-q", "--no-sanity", "--no-report")
    assert result.exit_code == 1, result.output
    assert "stopped at look 1 of 2 (2 trials per case): a rule failed, so the gate fails whatever more trials show" \
        in result.output
    verdict = json.loads((out / "gate.json").read_text())
    assert [r["outcome"] for r in verdict["rules"]] == ["FAIL", "INCONCLUSIVE"]
    assert len(keys(out)) == 6


async def does_the_task(ep: Any) -> str:
    await ep.call("add_note", {"title": "call mom", "priority": 2})
    return "added"


def test_a_killed_sequential_run_resumes_at_its_look_without_repeating_or_losing_a_trial(write_suite: Any,
                                                                                         tmp_path: Path) -> None:
    suite = write_suite({f"c{i}": "cand=p" for i in range(4)})
    rules = gate(tmp_path, "never_fails:")  # "no failure yet" keeps the run going to its last look
    out = tmp_path / "run"
    design = Sequential((2, 4, 6))

    async def killed() -> None:
        main = asyncio.current_task()
        assert main is not None

        async def agent(ep: Any) -> str:
            if (ep.case_id, ep.trial) == ("c2", 2):  # in the second round, after look 1 was taken
                main.cancel()  # what Ctrl-C does (passhat.shutdown cancels the run's task)
                await asyncio.sleep(3600)
            return await does_the_task(ep)

        await passhat.api.evaluate_async(suite, agent, name="cand", gate=rules, sequential=design, out=out,
                                         concurrency=1, sanity=False)

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(killed())
    before = (out / "trials.jsonl").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "running" and [look["look"] for look in manifest["sequential"]["looks"]] == [1]
    assert manifest["sequential"].get("stopped") is None
    done_before = len(before.splitlines())
    assert done_before == 12  # round 1 (8) and c0, c1 of round 2
    # gated now, the killed run is judged at the looks it completed, with their boundaries: not final
    peek = evaluate_gate(out)
    assert peek.outcome == "INCONCLUSIVE" and peek.sequential is not None and peek.sequential.stopped is None
    assert "not final: the sequential run is at look 1 of 3" in peek.rules[0].reason

    reports: list[Progress] = []
    run = passhat.api.evaluate(suite, does_the_task, name="cand", gate=rules, out=out, resume=True, sanity=False,
                               progress=reports.append)
    assert reports[0].done == done_before and reports[-1].done == 24  # it went on from where it was
    assert (out / "trials.jsonl").read_text().startswith(before)  # nothing recorded was lost or rewritten
    assert sorted(keys(out)) == [(f"c{i}", t) for i in range(4) for t in range(6)]  # and nothing ran twice
    assert run.gate_result is not None and run.gate_result.outcome == "PASS"
    block = run.manifest.sequential
    assert block is not None and [look.look for look in block.looks] == [1, 2, 3]
    assert block.stopped is not None and block.stopped.reason == "max_trials" and block.stopped.trials_saved == 0
    assert manifest["sequential"]["looks"][0] == block.looks[0].model_dump()  # look 1 replayed identically


def test_sequential_options_are_checked_before_any_trial(cli: Any, write_suite: Any, tmp_path: Path) -> None:
    suite = write_suite({"c1": "cand=p"})
    g = gate(tmp_path, "pass_hat_k: {k: 1, min: 0.5}")
    base = ("run", suite, "--agent", CAND, "--no-sanity", "-q", "--out")
    for extra, message in (
            (("--sequential",), "--sequential needs --gate FILE"),
            (("--gate", g, "--looks", "2,4"), "--looks and --max-trials belong to a sequential run: add --sequential"),
            (("--gate", g, "--sequential", "-k", "8"), "--trials 8 and --sequential"),
            (("--gate", g, "--sequential", "--looks", "4,2"), "--looks must increase, got 4,2"),
            (("--gate", g, "--sequential", "--looks", "2,4,16", "--max-trials", "8"), "beyond --max-trials 8")):
        out = tmp_path / f"refused-{len(list(tmp_path.iterdir()))}"
        result = cli(*base, out, *extra)
        assert result.exit_code == 2, result.output
        assert message in result.output
        assert not (out / "trials.jsonl").exists()


def test_a_run_keeps_the_design_it_started_with(cli: Any, write_suite: Any, tmp_path: Path) -> None:
    suite = write_suite({"c1": "cand=p", "c2": "cand=p"})
    g = gate(tmp_path, "pass_hat_k: {k: 1, min: 0.1}")
    seq, fixed = tmp_path / "seq", tmp_path / "fixed"
    assert cli("run", suite, "--agent", CAND, "--gate", g, "--sequential", "--looks", "2,4", "--out", seq, "-q",
               "--no-sanity", "--no-report").exit_code in (0, 3)
    assert cli("run", suite, "--agent", CAND, "--gate", g, "-k", "2", "--out", fixed, "-q", "--no-sanity",
               "--no-report").exit_code in (0, 3)
    for folder, extra, message in (
            (seq, ("--sequential", "--looks", "2,6"), "it was started with sequential=(2, 4) (now (2, 6))"),
            (fixed, ("--sequential", "--looks", "1,2"), "it was started with sequential=None (now (1, 2))")):
        result = cli("run", suite, "--agent", CAND, "--gate", g, "--resume", "--out", folder, "-q", "--no-sanity", *extra)
        assert result.exit_code == 2 and message in result.output, result.output
    other = tmp_path / "other"
    assert cli("run", suite, "--agent", CAND, "-k", "2", "--out", other, "-q", "--no-sanity",
               "--no-report").exit_code == 0
    result = cli("gate", seq, "--baseline", other)
    assert result.exit_code == 2 and "decided its looks without a baseline" in result.output
    with pytest.raises(PasshatError, match="--sequential needs --gate FILE"):
        passhat.api.evaluate(suite, CAND, sequential=Sequential((1, 2)), out=tmp_path / "api", sanity=False)


def test_a_builtin_suite_run_sequentially_stops_early_and_records_why(cli: Any, tmp_path: Path) -> None:
    """refunds with the reference agents: careful is decided at the first look, hasty fails there."""
    rules = gate(tmp_path, "never_fails: {select: {tags: {scenario: permission}}, min_lower_bound: 0.1}",
                 "pass_hat_k: {k: 1, min: 0.5}")
    for agent, code, reason, outcomes in (
            ("careful", 0, "every rule was decided", ["PASS", "PASS"]),
            ("hasty", 1, "a rule failed, so the gate fails whatever more trials show", ["FAIL", "INCONCLUSIVE"])):
        out = tmp_path / agent
        result = cli("run", "refunds", "--agent", agent, "--gate", rules, "--sequential", "--looks", "2,4,8",
                     "--out", out, "-q", "-j", "8", "--no-sanity", "--no-report")
        assert result.exit_code == code, result.output
        assert f"stopped at look 1 of 3 (2 trials per case): {reason}; 96 of 128 trials saved" in " ".join(
            result.output.split())
        verdict = json.loads((out / "gate.json").read_text())
        assert [r["outcome"] for r in verdict["rules"]] == outcomes
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["sequential"]["stopped"]["reason"] == ("decided" if code == 0 else "failed")
        assert len(keys(out)) == 32


ERRING_AGENT = '''\
import re
from passhat.errors import InfrastructureError


async def agent(ep):
    """Follows the cand plan; 'e' is an infrastructure error (a trial that is never graded)."""
    plan = re.search(r"\\bcand=(\\w+)", ep.instruction).group(1)
    step = plan[ep.trial % len(plan)]
    if step == "e":
        raise InfrastructureError("provider down (503)")
    if step == "p":
        await ep.call("add_note", {"title": "call mom", "priority": 2})
    return "added"
'''


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN and ±Infinity, as passhat's writers do."""
    def refuse(token: str) -> Any:
        raise AssertionError(f"non-finite number {token} in a written file")
    return json.loads(text, parse_constant=refuse)


def test_a_case_with_no_graded_trial_keeps_every_rule_inconclusive_and_writes_no_nan(cli: Any, write_suite: Any,
                                                                                   tmp_path: Path) -> None:
    """A case whose every trial is an infrastructure error has n = 0 at each look: the mean rules leave it out of
    their per-case values (no 0/0), name it, and stay INCONCLUSIVE; gate, replay and compare write finite JSON."""
    plans = {f"c{i}": "base=p cand=p" for i in range(6)} | {"down": "base=p cand=e"}
    suite = write_suite(plans)
    agents = tmp_path / "erring.py"
    agents.write_text(ERRING_AGENT)
    base = tmp_path / "base"
    assert cli("run", suite, "--agent", f"{PLANNED_AGENTS}:base", "-k", "4", "--out", base, "-q", "--no-sanity",
               "--no-report").exit_code == 0
    rules = gate(tmp_path, "pass_hat_k: {k: 2, min: 0.3}", "pass_at_k: {k: 1, min: 0.3}",
                 "case_success_rate: {min: 0.3}", "never_fails:", "no_new_failures:",
                 "non_inferior: {k: 1, margin: 0.1}")
    out = tmp_path / "run"
    result = cli("run", suite, "--agent", f"{agents}:agent", "--gate", rules, "--sequential", "--looks", "2,4",
                 "--baseline", base, "--out", out, "-q", "--no-sanity")
    assert result.exit_code == 3, result.output
    verdict = strict_json((out / "gate.json").read_text())
    assert [r["outcome"] for r in verdict["rules"]] == ["INCONCLUSIVE"] * 6
    for rule in verdict["rules"][:4]:
        assert "down" in rule["reason"], rule["reason"]
    again = cli("gate", out)  # the replay of the looks
    assert again.exit_code == 3, again.output
    assert strict_json((out / "gate.json").read_text())["rules"] == verdict["rules"]
    fixed = tmp_path / "fixed"  # the same rules on a fixed-design run
    result = cli("run", suite, "--agent", f"{agents}:agent", "--gate", rules, "-k", "4", "--baseline", base,
                 "--out", fixed, "-q", "--no-sanity", "--no-report")
    assert result.exit_code == 3, result.output
    assert [r["outcome"] for r in strict_json((fixed / "gate.json").read_text())["rules"]] == ["INCONCLUSIVE"] * 6
    compared = cli("compare", base, out, "--json", tmp_path / "compare.json", "--by", "scenario")
    assert compared.exit_code == 0, compared.output
    assert "no graded trial in candidate for: down" in compared.output
    assert strict_json((tmp_path / "compare.json").read_text())["metrics"]["pass_hat_1"]["cases"] == 6
    only_down = write_suite({"down": "base=p cand=e"}, name="only-down")  # no case graded in both runs
    runs = [tmp_path / "only-base", tmp_path / "only-cand"]
    for folder, agent in zip(runs, (f"{PLANNED_AGENTS}:base", f"{agents}:agent"), strict=True):
        cli("run", only_down, "--agent", agent, "-k", "2", "--out", folder, "-q", "--no-sanity", "--no-report")
    compared = cli("compare", *runs, "--json", tmp_path / "none.json")
    assert compared.exit_code == 0, compared.output
    assert "no paired difference: no case has a graded trial in both runs" in compared.output
    assert "pseudo-case" not in compared.output  # no empty table with its caption
    assert strict_json((tmp_path / "none.json").read_text())["metrics"] == {}
    for folder in (out, fixed):
        for written in folder.iterdir():
            if written.suffix == ".json":
                strict_json(written.read_text())
            elif written.suffix == ".jsonl":
                for line in written.read_text().splitlines():
                    strict_json(line)
