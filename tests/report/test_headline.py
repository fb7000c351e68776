"""The run in one sentence: its numbers are right and every clause is true as printed; it comes first in the
terminal, the Markdown step summary and report.html; tables in a CI log keep ids whole and long checks on
one line; an all-pass run prints no note that changes no decision; ``--case`` chooses cases."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from scipy.stats import binom

from passhat.cli import main
from passhat.models import CaseSummary
from passhat.report.headline import agent_label, detectable_rate, headline, one_in, rate_words
from passhat.report.markdown import markdown_summary
from passhat.report.terminal import check_cell
from tests.models.builders import summary_of

NOTES = Path(__file__).parents[1] / "data" / "notes"
# One passing case bounds the suite pass^2 below by Clopper–Pearson's 0.05 (one-sided, α = 0.05): a bar of 0.04 PASSes.
GATE = "name: bars\nrules:\n  - pass_hat_k: {k: 2, min: 0.04}\n  - never_fails: {}\n"


def cli(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("trials", [1, 2, 19, 64, 76, 400, 10_000])
def test_the_detectable_rate_is_the_rate_a_failure_shows_at_with_95_percent(trials: int) -> None:
    """At p*, all trials pass with probability exactly 5 %; at the rate the sentence names, at most 5 %."""
    rate = detectable_rate(trials)
    assert binom.pmf(trials, trials, 1 - rate) == pytest.approx(0.05, rel=1e-9)
    named = 1 / one_in(rate) if one_in(rate) >= 10 else int(rate_words(rate).split()[0]) / 100
    assert named >= rate and (1 - named) ** trials <= 0.05 + 1e-12


def test_rates_in_words() -> None:
    assert detectable_rate(76) == pytest.approx(1 - 0.05 ** (1 / 76))
    assert rate_words(detectable_rate(76)) == "1 in 25"  # p* = 0.0386: 1/25 = 0.04 ≥ p*, 1/26 would not be
    assert rate_words(detectable_rate(2)) == "78 %"  # p* = 0.776, rounded up
    assert agent_label("/a/b/agents.py:good") == "agents.py:good" and agent_label("openai:gpt-x") == "openai:gpt-x"


def test_an_all_pass_run_in_one_sentence() -> None:
    line = headline(summary_of([(4, 4, 0)] * 16, 4))
    assert line.text == ("careful: 16 of 16 cases passed all 4 trials; pass^4 1.00 (95 % interval 0.79–1.00); "
                         "with 64 trials, a failure rate of 1 in 21 or higher, if every case shared it, would have "
                         "shown with 95 % probability.")
    assert line.pointer() == ("definitions: the case count docs/statistics.md#the-headline; pass^k and its interval "
                              "docs/statistics.md#per-suite; the detectable failure rate "
                              "docs/statistics.md#what-a-clean-run-rules-out")


def test_failures_and_errors_are_said_and_no_detection_claim_is_made() -> None:
    line = headline(summary_of([(4, 4, 0), (4, 3, 0), (3, 3, 1)], 4, est=0.5, low=0.2051, high=0.8049))
    assert line.text == ("careful: 1 of 3 cases passed all 4 trials, 1 failed at least once; pass^4 0.50 "
                         "(95 % interval 0.20–0.81); 1 trial(s) ended in infrastructure errors, counted as neither "
                         "pass nor fail.")
    assert "would have shown" not in line.text


def test_interval_ends_are_rounded_outwards() -> None:
    text = headline(summary_of([(2, 1, 0)], 2, est=0.5, low=0.349, high=0.651)).text
    assert "95 % interval 0.34–0.66" in text


def test_with_no_case_at_k_the_sentence_says_so() -> None:
    summary = summary_of([(1, 1, 1)], 2, est=None)
    assert "pass^2 — (no case has 2 graded trials)" in headline(summary).text


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The notes suite with a second case whose id is long, and an agent whose failure is a traceback."""
    root = Path(shutil.copytree(NOTES, tmp_path_factory.mktemp("suite") / "notes"))
    case = (root / "cases" / "add-note.yaml").read_text()
    long_id = "add-note-with-a-rather-long-identifier-that-a-ci-log-must-show-whole"
    (root / "cases" / "long.yaml").write_text(case.replace("id: add-note", f"id: {long_id}"))
    (root / "crash.py").write_text("async def agent(episode):\n    raise RuntimeError('the model said: ' + 'no ' * 200)\n")
    return root


def test_terminal_output_starts_with_the_headline_and_keeps_ids_whole(suite: Path, tmp_path: Path) -> None:
    r = cli("run", suite / "cases", "--agent", f"{suite / 'crash.py'}:agent", "-k", "2", "--out", tmp_path / "run",
            "--no-report", "--no-sanity")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("crash.py:agent: 0 of 2 cases passed all 2 trials, 2 failed at least once; pass^2 0.00")
    assert lines[1].startswith("definitions: ")
    long_id = "add-note-with-a-rather-long-identifier-that-a-ci-log-must-show-whole"
    rows = [line for line in lines if line.startswith("│") and "│ 0/2 │" in line]
    assert any(long_id in row for row in rows), "a case id is never cut in a log"
    assert len(rows) == 2, "one line per case, however long its failing check"
    assert all("no no no" in row and "[whole text: trial 0 in trials.jsonl]" in row for row in rows), rows
    assert all(len(row) < 400 for row in rows)


def test_a_traceback_sized_check_is_cut_to_its_first_line_with_a_pointer() -> None:
    case = CaseSummary(id="c", n=1, successes=0, errors=0, top_failure_trial=3,
                       top_failure="agent_completed: Traceback (most recent call last):\n  File x\nValueError: y")
    assert check_cell(case) == "agent_completed: Traceback (most recent call last):… [whole text: trial 3 in trials.jsonl]"
    plain = case.model_copy(update={"top_failure": "row_count: expected 1, actual 0"})
    assert check_cell(plain) == "row_count: expected 1, actual 0"


def test_an_all_pass_run_prints_no_note_that_changes_no_decision(tmp_path: Path) -> None:
    r = cli("run", NOTES / "cases", "--agent", f"{NOTES / 'agents.py'}:good", "-k", "2", "--out", tmp_path / "run",
            "--no-report")
    assert r.exit_code == 0, r.output
    assert "note:" not in r.output and "pseudo-case interval alone" not in r.output
    assert "total cost 0.0000" not in r.output, "nothing was priced: no cost figure"


def test_case_option_runs_only_those_cases(suite: Path, tmp_path: Path) -> None:
    r = cli("run", suite / "cases", "--agent", f"{NOTES / 'agents.py'}:good", "-k", "1", "--case", "add-note",
            "--out", tmp_path / "run", "-q", "--no-report", "--no-sanity")
    assert r.exit_code == 0, r.output
    records = [json.loads(line) for line in (tmp_path / "run" / "trials.jsonl").read_text().splitlines()]
    assert [r["case_id"] for r in records] == ["add-note"]
    bad = cli("run", suite / "cases", "--agent", f"{NOTES / 'agents.py'}:good", "--case", "add-nte",
              "--out", tmp_path / "bad", "-q")
    assert bad.exit_code == 2
    assert "no case 'add-nte'" in bad.output and "did you mean 'add-note'" in bad.output
    assert "add-note-with-a-rather-long-identifier" in bad.output, "the valid ids are named"


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gated")
    (root / "gate.yaml").write_text(GATE)
    r = cli("run", NOTES / "cases", "--agent", f"{NOTES / 'agents.py'}:good", "-k", "2", "--gate", root / "gate.yaml",
            "--out", root / "run", "--summary-md", root / "summary.md", "-q")
    assert r.exit_code == 0, r.output
    return root / "run"


def test_the_step_summary_starts_with_the_headline(gated: Path) -> None:
    text = (gated.parent / "summary.md").read_text()
    assert text.splitlines()[2].startswith("**agents.py:good: 1 of 1 cases passed all 2 trials; pass^2 1.00")
    assert "docs/statistics.md#what-a-clean-run-rules-out" in text.splitlines()[4]
    assert text.index("**agents.py:good") < text.index("### Gate `bars`")


def test_report_html_shows_the_headline_then_the_gate_and_each_rule(gated: Path) -> None:
    page = (gated / "report.html").read_text()
    body = page[page.index("<body>"):]
    assert body.index('id="headline"') < body.index('id="gate"') < body.index('class="kpis"') < body.index('id="curves"')
    gate = json.loads((gated / "gate.json").read_text())
    section = body[body.index('id="gate"'):body.index("</section>", body.index('id="gate"'))]
    assert f'<b class="verdict">{gate["outcome"]}</b>' in section
    rows = re.findall(r'<tr class="rule (\w+)"><td class="outcome">(\w+)</td><td>([^<]*)</td>', section)
    assert [(o, name) for _, o, name in rows] == [(r["outcome"], r["name"].replace(">", "&gt;").replace("<", "&lt;"))
                                                  for r in gate["rules"]]
    for kind in ("cases", "pass_hat_k", "interval", "detectable"):
        assert f'href="#def-{kind}"' in body and f'id="def-{kind}"' in body, kind


def test_a_plain_markdown_summary_has_the_headline_too() -> None:
    text = markdown_summary(summary_of([(4, 4, 0)] * 2, 4))
    assert "**careful: 2 of 2 cases passed all 4 trials" in text


def test_columns_sets_the_case_table_width_and_the_check_column_shrinks_first(suite: Path, tmp_path: Path) -> None:
    """With COLUMNS (in a pipe, as on a terminal) the table fits it by cutting the failing check with "…";
    c/n and pass^k stay readable (every column was no_wrap, so rich squeezed them to nothing)."""
    run = tmp_path / "run"
    assert cli("run", suite / "cases", "--agent", f"{suite / 'crash.py'}:agent", "-k", "2", "--out", run,
               "--no-report", "--no-sanity", "-q").exit_code == 0
    r = CliRunner().invoke(main, ["show", str(run)], env={"COLUMNS": "150"})
    assert r.exit_code == 0, r.output
    rows = [line for line in r.output.splitlines() if line.startswith("│ add-note")]
    assert len(rows) == 2 and all(len(row) <= 150 for row in rows), r.output
    assert all("│ 0/2 │" in row and "│  0.000 │" in row and "│ agent_completed: " in row and row.rstrip(" │").endswith("…")
               for row in rows), rows
