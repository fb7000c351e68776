"""A CI engineer's walk through every command with bad input: one clear line and the documented exit
code, never a traceback, an empty result that looks like success, or an option that is silently ignored."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

NOTES = Path(__file__).parent.parent / "data" / "notes"


@pytest.fixture
def cli(cli: Any) -> Any:
    """The shared ``cli`` fixture with a wide terminal, so messages and tables are not wrapped."""

    def invoke(*args: Any) -> Any:
        return cli(*args, env={"COLUMNS": "400"})

    return invoke


def no_traceback(result: Any) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def hasty_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One trial per case of the built-in refunds suite with `hasty` (some cases fail, one is holdout)."""
    from click.testing import CliRunner

    from passhat.cli import main

    out = tmp_path_factory.mktemp("walk") / "hasty"
    r = CliRunner().invoke(main, ["run", "refunds", "--agent", "hasty", "-k", "1", "-q", "--no-report", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


# --- files that cannot be written: one line naming the file, exit 2 -------------------------------------------


def test_an_output_that_cannot_be_written_is_bad_input_not_a_traceback(cli: Any, tmp_path: Path, hasty_run: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for args in (("suite", "freeze", "refunds", "--out", blocker / "snap.json"),
                 ("compare", hasty_run, hasty_run, "-q", "--json", blocker / "diff.json"),
                 ("regrade", hasty_run, "--out", blocker / "regraded")):
        r = cli(*args)
        no_traceback(r)
        assert r.exit_code == 2, (args, r.output)
        assert "error:" in r.output and str(blocker) in r.output


# --- run: options checked before the first trial -----------------------------------------------------------------


def test_run_refuses_a_malformed_otlp_url_before_any_trial(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = cli("run", "refunds", "--agent", "careful", "-k", "1", "-q", "--out", out, "--otlp", "localhost:4318")
    assert r.exit_code == 2, r.output
    assert "--otlp 'localhost:4318'" in r.output and "http" in r.output
    assert not out.exists()  # not a warning after the whole run


def test_export_otlp_names_its_own_option(cli: Any, hasty_run: Path) -> None:
    r = cli("export-otlp", hasty_run, "--endpoint", "localhost:4318")
    assert r.exit_code == 2
    assert "--endpoint" in r.output and "--otlp" not in r.output


def test_an_unknown_agent_name_lists_the_built_in_agents(cli: Any) -> None:
    r = cli("run", "refunds", "--agent", "carefull", "-q")
    assert r.exit_code == 2
    for name in ("careful", "hasty", "flaky", "noop", "module:function"):
        assert name in r.output


def test_an_agent_module_in_the_current_folder_is_found(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/agents.md: `--agent my_module:my_agent` — with my_module.py where the command runs."""
    (tmp_path / "walkthrough_cwd_agent.py").write_text((NOTES / "agents.py").read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    r = cli("run", NOTES / "cases", "--agent", "walkthrough_cwd_agent:good", "-k", "1", "-q", "--no-report",
            "--out", tmp_path / "run")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "run" / "trials.jsonl").read_text().splitlines()[0])["outcome"] == "pass"


def test_quiet_run_still_prints_its_result_in_one_line(cli: Any, tmp_path: Path) -> None:
    r = cli("run", NOTES / "cases", "--agent", f"{NOTES / 'agents.py'}:good", "-k", "2", "-q", "--no-report",
            "--out", tmp_path / "run")
    assert r.exit_code == 0, r.output
    # one case: the lower bound is Clopper–Pearson's 0.025 for 1 of 1 (0.158 before issue 22), printed rounded down
    assert ("agents.py:good: 1 of 1 cases passed all 2 trials; pass^2 1.00 (95 % interval 0.02–1.00); with 2 trials, "
            "a failure rate of 78 % or higher, if every case shared it, would have shown with 95 % probability.") in r.output


def test_resume_continues_with_the_options_it_started_with_and_refuses_others(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert cli("run", "refunds", "--agent", "careful", "-k", "2", "-q", "--no-report", "--out", out,
               "--split", "holdout").exit_code == 0
    chosen = json.loads((out / "manifest.json").read_text())["selection"]["cases"]
    lines = (out / "trials.jsonl").read_text().splitlines()
    assert len(lines) == 2 * len(chosen)
    (out / "trials.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # as if killed before its last trial
    r = cli("run", "refunds", "--agent", "careful", "-q", "--no-report", "--out", out, "--resume", "-j", "1")
    assert r.exit_code == 0, r.output  # neither -k 2 nor --split given again: the manifest's options are used
    records = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    assert sorted((x["case_id"], x["trial"]) for x in records) == sorted((c, t) for c in chosen for t in range(2))
    assert json.loads((out / "manifest.json").read_text())["options"]["concurrency"] == 1  # a session option may change
    r = cli("run", "refunds", "--agent", "careful", "-q", "--no-report", "--out", out, "--resume", "--split", "dev")
    assert r.exit_code == 2
    assert "splits=('holdout',)" in r.output and "('dev',)" in r.output and "leave that option out" in r.output


def test_resume_without_out_is_refused_before_loading_anything(cli: Any) -> None:
    r = cli("run", "no-such-suite", "--agent", "careful", "--resume")
    assert r.exit_code == 2 and "--resume needs --out" in r.output


# --- suite folders ------------------------------------------------------------------------------------------------


def test_lint_of_an_empty_folder_is_bad_input(cli: Any, tmp_path: Path) -> None:
    """docs/datasets.md: exit 2 when SUITE is not a suite (1 is for a suite with findings)."""
    r = cli("cases", "lint", tmp_path)
    assert r.exit_code == 2, r.output
    assert "no case files" in r.output


def test_a_suite_root_points_at_its_cases_folder(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "my_suite"
    (root / "cases").mkdir(parents=True)
    (root / "cases" / "a.yaml").write_text((NOTES / "cases" / "add-note.yaml").read_text())
    for args in (("run", root, "--agent", "careful"), ("cases", "lint", root), ("suite", "hash", root)):
        r = cli(*args)
        assert r.exit_code == 2
        assert f"{root / 'cases'}: pass that folder" in r.output, args


# --- show ---------------------------------------------------------------------------------------------------------


def test_show_takes_several_splits_like_run(cli: Any, hasty_run: Path) -> None:
    both = cli("show", hasty_run, "--split", "dev", "--split", "holdout")
    assert both.exit_code == 0, both.output
    assert "16 cases" in both.output and "refund-4850-holdout" in both.output and "already-refunded-4860" in both.output
    assert "dev|holdout" in both.output


def test_show_of_a_split_the_run_does_not_have_is_bad_input(cli: Any, hasty_run: Path) -> None:
    r = cli("show", hasty_run, "--split", "regression")
    assert r.exit_code == 2
    assert "regression" in r.output and "dev, holdout" in r.output


def test_show_says_when_a_run_is_not_complete(cli: Any, hasty_run: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    manifest = json.loads((hasty_run / "manifest.json").read_text())
    (partial / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    lines = (hasty_run / "trials.jsonl").read_text().splitlines(keepends=True)
    (partial / "trials.jsonl").write_text("".join(lines[:5]))
    r = cli("show", partial)
    assert r.exit_code == 0, r.output
    assert "not complete" in r.output and "5 of 16 trial(s)" in r.output and "--resume" in r.output
    assert "not complete" not in cli("show", hasty_run).output


# --- cases from-failure -------------------------------------------------------------------------------------------


def test_from_failure_lists_what_can_be_picked(cli: Any, hasty_run: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in (hasty_run / "trials.jsonl").read_text().splitlines()]
    failed = sorted({r["case_id"] for r in records if r["outcome"] == "fail"})
    passed = next(r["case_id"] for r in records if r["outcome"] == "pass")
    r = cli("cases", "from-failure", hasty_run, passed, 0, "--out", tmp_path / "x.yaml")
    assert r.exit_code == 2
    assert "cases with failed trials" in r.output and failed[0] in r.output
    r = cli("cases", "from-failure", hasty_run, failed[0], 7, "--out", tmp_path / "x.yaml")
    assert r.exit_code == 2 and f"failed trials of {failed[0]!r}: 0" in r.output
    r = cli("cases", "from-failure", tmp_path, "x", 0, "--out", tmp_path / "x.yaml")
    assert r.exit_code == 2 and "not a run folder" in r.output


# --- judge, pairwise, calibrate: nothing to work on is not a success ----------------------------------------------


def test_calibrate_refuses_a_folder_that_is_not_a_run(cli: Any, tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,trial,label\na,0,pass\n")
    r = cli("calibrate", "--labels", labels, "--judgments", tmp_path)
    assert r.exit_code == 2
    assert "not a run folder" in r.output and "--judgments" in r.output


def test_judge_and_pairwise_with_nothing_to_judge_are_bad_input(cli: Any, hasty_run: Path, tmp_path: Path) -> None:
    model = ("--judge", "openai:judge-model", "--base-url", "http://127.0.0.1:9/v1", "--retries", "1")
    r = cli("judge", hasty_run, *model, "--out", tmp_path / "j.jsonl")
    assert r.exit_code == 2 and "nothing to judge" in r.output and "judge:" in r.output
    other = tmp_path / "notes-run"
    assert cli("run", NOTES / "cases", "--agent", f"{NOTES / 'agents.py'}:good", "-k", "1", "-q", "--no-report",
               "--out", other).exit_code == 0
    r = cli("pairwise", hasty_run, other, *model, "--out", tmp_path / "p.jsonl")
    assert r.exit_code == 2 and "nothing to compare" in r.output


# --- OTLP export: one line of our own, not the exporter's retry log -----------------------------------------------


def test_export_to_a_dead_collector_prints_one_error_not_the_exporters_log(hasty_run: Path) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    import subprocess

    r = subprocess.run([sys.executable, "-m", "passhat", "export-otlp", str(hasty_run), "--endpoint",
                        "http://127.0.0.1:9", "--timeout", "0.5"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "http://127.0.0.1:9/v1/traces" in r.stderr
    assert "Transient error" not in r.stderr and "Failed to export" not in r.stderr
