"""summary.json: numbers equal an independent recomputation from trials.jsonl; intervals and strata."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from passhat.cli import main
from passhat.results import build_summary
from passhat.runner import RunStore

NOTES = Path(__file__).parents[1] / "data" / "notes"


def test_summary_matches_recomputation_and_carries_intervals(tmp_path: Path, summary_matches: Any) -> None:
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", f"{NOTES / 'agents.py'}:good",
                                  "--trials", "4", "--out", str(out), "--by", "scenario", "-q"])
    assert r.exit_code == 0, r.output
    summary_matches(out)
    s = json.loads((out / "summary.json").read_text())
    case = s["cases"][0]
    assert 0 < case["wilson_low"] < 1 == case["wilson_high"]
    assert s["strata"]["scenario"]["normal"]["cases"] == 1
    assert s["suite"]["experience"]["steps_per_trial"]["mean"] == 2
    assert s["suite"]["pass_hat_k"]["1"]["fixed_suite_se"] == 0.0
    assert s["suite"]["pass_hat_k"]["4"]["fixed_suite_se"] is None  # needs n >= 2k


def test_intervals_are_reproducible_and_excluded_cases_listed(run_notes: Any) -> None:
    out = run_notes("good", trials=3)
    store = RunStore(out)
    recs = store.load()
    manifest = store.manifest()
    a = build_summary(recs, manifest)
    b = build_summary(recs, manifest)
    assert a.suite.pass_hat_k == b.suite.pass_hat_k
    fewer = [r for r in recs if r.trial < 2]
    s = build_summary(fewer, manifest)
    assert 3 not in s.suite.pass_hat_k and s.cases[0].n == 2


def test_do_nothing_check_flags_cases_that_pass_without_work(tmp_path: Path) -> None:
    suite = tmp_path / "cases"
    suite.mkdir()
    shutil.copy(NOTES / "cases" / "add-note.yaml", suite / "a.yaml")
    (suite / "free.yaml").write_text(
        f"id: free-pass\ndomain: {NOTES / 'domain.py'}\ninstruction: hi\n"
        "assertions:\n  - row_count: {table: notes, where: {owner: bob}, equals: 1}\n")
    (suite / "a.yaml").write_text((suite / "a.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py")))
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(suite), "--agent", f"{NOTES / 'agents.py'}:good", "--trials", "1",
                                  "--out", str(out), "-q"])
    assert r.exit_code == 0
    assert ("warning: 1 case(s) pass with an agent that does nothing: free-pass — their assertions do not prove the "
            "work was done") in r.output.splitlines()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sanity"] == {"checked": True, "noop_passes": ["free-pass"]}


def test_run_reads_its_records_once_for_summary_and_report(tmp_path: Path, monkeypatch: Any) -> None:
    """The summary written by `run` already holds the report's strata, so the report does not rebuild it."""
    import passhat.report.html as html

    def rebuilt(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the report rebuilt the summary from the records")

    monkeypatch.setattr(html, "build_summary", rebuilt)
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", f"{NOTES / 'agents.py'}:good",
                                  "--trials", "2", "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert (out / "report.html").exists()
    assert "scenario" in json.loads((out / "summary.json").read_text())["strata"]
