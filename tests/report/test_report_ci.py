"""CI outputs: JUnit XML a standard parser reads, and the Markdown summary in $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import errno
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from passhat.report.junit import junit_xml
from passhat.runner.records import Timing, TrialRecord
from tests.models.builders import summary_of

AGENTS = Path(__file__).parents[1] / "data" / "notes" / "agents_compare.py"
PLANS = {"steady": "base=pppp", "shaky": "base=ppfp", "broken": "base=ffff"}


def run_with(cli: Any, suite: Path, out: Path, *extra: Any, env: Any = None) -> Any:
    return cli("run", suite, "--agent", f"{AGENTS}:base", "--trials", 4, "--out", out, "-q", "--no-sanity", *extra,
               env=env)


def test_junit_has_one_testcase_per_case_with_grader_reasons(cli: Any, write_suite: Any, tmp_path: Path) -> None:
    gate = tmp_path / "gate.yaml"
    gate.write_text("name: ci\nrules:\n  - never_fails: {select: {cases: [steady]}}\n  - no_new_failures:\n"
                    "  - pass_hat_k: {k: 4, min: 0.9}\n  - never_fails: {select: {cases: [shaky]}}\n")
    xml = tmp_path / "out" / "results.xml"
    r = run_with(cli, write_suite(PLANS), tmp_path / "run", "--gate", gate, "--junit", xml)
    assert r.exit_code == 1, r.output
    root = ET.parse(xml).getroot()
    cases_suite, gate_suite = root.findall("testsuite")
    cases = {tc.get("name"): tc for tc in cases_suite.findall("testcase")}
    assert set(cases) == set(PLANS) and {tc.get("classname") for tc in cases.values()} == {"suite"}
    assert cases_suite.get("tests") == "3" and cases_suite.get("failures") == "2"
    assert cases["steady"].find("failure") is None
    failure = cases["shaky"].find("failure")
    assert failure is not None and failure.get("message", "").startswith("1 of 4 graded trial(s) failed: trial 2: row_count")
    assert "expected 1, actual 0" in (failure.text or "")
    assert (cases["broken"].find("failure").text or "").count("trial ") >= 4  # type: ignore[union-attr]
    rules = {tc.get("name"): tc for tc in gate_suite.findall("testcase")}
    assert gate_suite.get("name") == "gate ci" and len(rules) == 4
    assert rules["never fails [cases=steady]"].find("failure") is None
    assert rules["no new failures"].find("skipped").get("message", "").startswith("SKIPPED")  # type: ignore[union-attr]
    # 1 of 3 cases passes all 4 trials: a suite at pass^4 = 0.9 shows that (or less) 2.8 % of the time, so FAIL.
    assert rules["pass^4 ≥ 0.9"].find("failure") is not None
    assert "shaky (3/4)" in rules["never fails [cases=shaky]"].find("failure").get("message", "")  # type: ignore[union-attr]
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("7", "4", "1")


def test_infrastructure_errors_are_junit_errors() -> None:
    def rec(trial: int, outcome: str) -> TrialRecord:
        return TrialRecord(case_id="c", trial=trial, seed=0, outcome=outcome,  # type: ignore[arg-type]
                           end_reason="harness_error", timing=Timing(started_at="t", total_s=0.5),
                           error="Traceback ...\nConnectionError: sandbox unreachable")

    summary = summary_of([(1, 1, 1)], 2, agent="a", ids=["c"])
    root = ET.fromstring(junit_xml(summary, [rec(0, "pass"), rec(1, "error")]))
    tc = root.find("testsuite/testcase")
    assert tc is not None and tc.find("failure") is None
    error = tc.find("error")
    assert error is not None and error.get("type") == "infrastructure"
    assert "trial 1: ConnectionError: sandbox unreachable" in (error.text or "")
    assert tc.get("time") == "1.000" and root.get("errors") == "1"


def test_markdown_summary_goes_to_github_step_summary_and_a_file(cli: Any, write_suite: Any, tmp_path: Path) -> None:
    step = tmp_path / "step_summary.md"
    step.write_text("earlier step\n")
    md = tmp_path / "summary.md"
    gate = tmp_path / "gate.yaml"
    gate.write_text("rules:\n  - never_fails: {select: {cases: [broken]}}\n")
    r = run_with(cli, write_suite(PLANS), tmp_path / "run", "--gate", gate, "--summary-md", md,
                 env={"GITHUB_STEP_SUMMARY": str(step)})
    assert r.exit_code == 1
    text = step.read_text()
    assert text.startswith("earlier step\n")  # appended, never overwritten
    assert text.removeprefix("earlier step\n").strip() == md.read_text().strip()
    assert "## passhat: `suite` · agent" in text and "gate ❌ FAIL" in text
    assert "| never fails [cases=broken] | ❌ FAIL |" in text
    assert "| k | pass^k | pass@k |" in text and "| 4 | 0.333 [" in text
    assert "| `broken` | 0/4 |" in text and "| `shaky` | 3/4 |" in text


def test_gate_summary_lists_new_failures_against_the_baseline(cli: Any, write_suite: Any, tmp_path: Path) -> None:
    # A new failure is a significant drop (issue 12): 4/4 → 0/4 is (p = 1/70); 2/2 → 1/2 never could be.
    suite = write_suite({"a": "base=pppp cand=ffff", "b": "base=pppp cand=pppp"})
    for name, agent in (("base", "base"), ("cand", "cand")):
        assert cli("run", suite, "--agent", f"{AGENTS}:{agent}", "--trials", 4, "--out", tmp_path / name, "-q",
                   "--no-sanity").exit_code == 0
    gate = tmp_path / "gate.yaml"
    gate.write_text("rules:\n  - no_new_failures:\n")
    md = tmp_path / "gate.md"
    r = cli("gate", tmp_path / "cand", "--gate", gate, "--baseline", tmp_path / "base", "--summary-md", md)
    assert r.exit_code == 1
    text = md.read_text()
    assert "not pre-registered" in text
    assert "1 new failure(s)" in text and "| `a` | 4/4 | 0/4 |" in text


def test_github_actions_example_gates_the_pull_request() -> None:
    import yaml

    workflow = yaml.safe_load((Path(__file__).parents[2] / "examples" / "github-actions.yml").read_text())
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    steps = workflow["jobs"]["eval"]["steps"]
    script = next(s["run"] for s in steps if s.get("id") == "eval")
    assert "--gate examples/gates/release.yaml" in script and "--junit results.xml" in script
    assert '"$code" -eq 3' in script and "::warning" in script and 'exit "$code"' in script
    assert any(s.get("uses", "").startswith("actions/upload-artifact") and s.get("if") == "always()" for s in steps)


@pytest.mark.parametrize(("case", "code"), [("steady", 0), ("shaky", 1)])
def test_a_full_disk_while_writing_the_report_changes_nothing_the_gate_decides(
        cli: Any, write_suite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, code: int) -> None:
    from passhat.report.trials import TrialData

    def disk_full(self: TrialData) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(self.trials_dir / "c00000.js"))

    monkeypatch.setattr(TrialData, "flush", disk_full)
    gate = tmp_path / "gate.yaml"
    gate.write_text(f"name: ci\nrules:\n  - never_fails: {{select: {{cases: [{case}]}}}}\n")
    out, xml = tmp_path / "run", tmp_path / "results.xml"
    r = run_with(cli, write_suite(PLANS), out, "--gate", gate, "--junit", xml)
    assert r.exit_code == code, r.output  # exactly what the gate says, as without a report
    assert "warning: no report written" in r.output and "No space left on device" in r.output
    assert "retry with: passhat report" in r.output
    assert ET.parse(xml).getroot().find("testsuite") is not None and (out / "gate.json").exists()
    assert not (out / "report.html").exists()
    assert not [p for p in (out / "report" / "trials").iterdir()], "the half-written chunks are removed"
