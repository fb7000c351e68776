"""Judge calibration: agreement statistics checked by hand, and the calibrate / judge / pairwise commands."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from scripts import first_position_judge, naive_judge

from passhat.calibrate import (
    Confusion,
    Thresholds,
    calibration_report,
    cohen_kappa,
    consistency,
    gwet_ac1,
    percent_agreement,
    rogan_gladen,
)
from passhat.calibrate.inputs import Judgment
from passhat.cli import main
from passhat.stats import wilson
from passhat.testing.fake_models import FakeRequest, ToolUse, Turn
from tests.llm.helpers import notes_case

PARADOX = Confusion(both_pass=90, judge_pass_human_fail=4, judge_fail_human_pass=4, both_fail=2)
"""statistics.md §6: 100 items, both pass 90, both fail 2, 4 + 4 disagreements."""


def test_kappa_paradox_by_hand() -> None:
    # p_o = 92/100; both raters pass 94%: p_e(κ) = .94² + .06² = .8872; π = .94: p_e(AC1) = 2·.94·.06 = .1128
    assert percent_agreement(PARADOX) == pytest.approx(0.92)
    assert cohen_kappa(PARADOX) == pytest.approx((0.92 - 0.8872) / (1 - 0.8872)) == pytest.approx(0.291, abs=5e-4)
    assert gwet_ac1(PARADOX) == pytest.approx((0.92 - 0.1128) / (1 - 0.1128)) == pytest.approx(0.910, abs=5e-4)
    balanced = Confusion(46, 4, 4, 46)  # same p_o, 50 % prevalence: κ and AC1 agree
    assert percent_agreement(balanced) == pytest.approx(0.92)
    assert cohen_kappa(balanced) == pytest.approx(0.84) and gwet_ac1(balanced) == pytest.approx(0.84)


def test_edge_cases_are_undefined_not_numbers() -> None:
    empty = Confusion(0, 0, 0, 0)
    assert percent_agreement(empty) is None and cohen_kappa(empty) is None and gwet_ac1(empty) is None
    assert cohen_kappa(Confusion(10, 0, 0, 0)) is None  # everyone passes everything: chance agreement is 1
    assert rogan_gladen(0.5, 0.5, 0.5) is None  # a coin-flip judge says nothing about the true rate
    assert consistency([[True], [False]]) == (None, 0)


def test_rogan_gladen_recovers_the_human_rate_and_clips() -> None:
    sens, spec = 90 / 94, 2 / 6
    assert rogan_gladen(0.94, sens, spec) == pytest.approx(0.94)  # on its own sample: the human pass rate
    assert rogan_gladen(0.9, 0.95, 0.9) == pytest.approx((0.9 + 0.9 - 1) / (0.95 + 0.9 - 1))
    assert rogan_gladen(0.01, 0.95, 0.9) == 0.0


def paradox_items() -> tuple[dict[Any, bool], list[Judgment]]:
    pattern = [(True, True)] * 90 + [(False, True)] * 4 + [(True, False)] * 4 + [(False, False)] * 2
    labels = {(f"c{i}", 0, None): h for i, (h, _) in enumerate(pattern)}
    judgments = [Judgment(f"c{i}", 0, None, j) for i, (_, j) in enumerate(pattern)]
    return labels, judgments


def test_report_on_a_skewed_sample_shows_kappa_and_ac1_apart() -> None:
    labels, judgments = paradox_items()
    judgments += [Judgment(f"c{i}", 0, None, j.passed != (i < 2), repeat=1) for i, j in enumerate(judgments[:10])]
    pairwise = [{"first_order": "A", "second_order": "A"}, {"first_order": "A", "second_order": "B"}]
    report = calibration_report(labels, judgments, pairwise, thresholds=Thresholds(min_kappa=0.6, min_ac1=0.85))
    assert report["items"] == 100 and report["prevalence"]["human_pass_rate"] == pytest.approx(0.94)
    assert report["percent_agreement"]["estimate"] == pytest.approx(0.92)
    assert report["cohen_kappa"] == pytest.approx(0.291, abs=5e-4) and report["gwet_ac1"] == pytest.approx(0.910, abs=5e-4)
    assert report["sensitivity"]["estimate"] == pytest.approx(90 / 94)
    assert (report["sensitivity"]["ci_low"], report["sensitivity"]["ci_high"]) == pytest.approx(wilson(90, 94))
    assert report["specificity"]["estimate"] == pytest.approx(2 / 6)
    assert report["test_retest"] == {"estimate": pytest.approx(0.8), "items": 10}
    assert report["swap_consistency"]["estimate"] == 0.5
    assert report["pass_rate"]["rogan_gladen"] == pytest.approx(0.94)
    assert not report["passed"] and report["failures"] == ["kappa: 0.291 < required 0.6"]


def write_paradox_files(tmp_path: Path) -> tuple[Path, Path]:
    labels, judgments = paradox_items()
    label_file = tmp_path / "labels.csv"
    with label_file.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["case_id", "trial", "label"])
        for (case_id, trial, _), h in labels.items():
            w.writerow([case_id, trial, "pass" if h else "fail"])
    judge_file = tmp_path / "judgments.jsonl"
    judge_file.write_text("".join(json.dumps({**j.to_json(), "judge": {"model": "judge-model"}}) + "\n" for j in judgments))
    return label_file, judge_file


def test_calibrate_command_writes_the_report_and_gates_on_minimums(tmp_path: Path) -> None:
    labels, judgments = write_paradox_files(tmp_path)
    out = tmp_path / "calibration.json"
    runner = CliRunner()
    ok = runner.invoke(main, ["calibrate", "--labels", str(labels), "--judgments", str(judgments), "--out", str(out),
                              "--min-agreement", "0.9", "--min-ac1", "0.85"])
    assert ok.exit_code == 0, ok.output
    assert "Gwet's AC1" in ok.output and "0.910" in ok.output and "0.291" in ok.output
    report = json.loads(out.read_text())
    assert report["format"] == "passhat.calibration/1" and report["passed"] and report["judge"] == {"model": "judge-model"}
    drifted = runner.invoke(main, ["calibrate", "--labels", str(labels), "--judgments", str(judgments), "--min-kappa", "0.6"])
    assert drifted.exit_code == 1 and "kappa: 0.291 < required 0.6" in drifted.output
    missing = runner.invoke(main, ["calibrate", "--labels", str(labels), "--judgments", str(judgments),
                                   "--min-swap-consistency", "0.8"])
    assert missing.exit_code == 1 and "swap_consistency: cannot be computed" in missing.output


def test_bad_labels_name_the_file_and_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"case_id": "c1", "trial": 0, "label": "pass"}\n{"case_id": "c2", "trial": 0, "label": "maybe"}\n')
    judgments = tmp_path / "j.jsonl"
    judgments.write_text('{"case_id": "c1", "trial": 0, "passed": true}\n')
    result = CliRunner().invoke(main, ["calibrate", "--labels", str(labels), "--judgments", str(judgments)])
    assert result.exit_code == 2
    assert result.output.splitlines() == [f"error: {labels}:2: label 'maybe' is not pass/fail "
                                          "(use pass, fail, true, false, 1 or 0)"]


HEADER = "case_id,trial,label\n"
BAD_LABELS = {  # file name: (content, the error after "error: FILE")
    "nan-trial.csv": (HEADER + "c1,NaN,pass\n", ":2: trial 'NaN' is not a whole number ≥ 0"),
    "inf-trial.csv": (HEADER + "c1,inf,pass\n", ":2: trial 'inf' is not a whole number ≥ 0"),
    "negative-trial.csv": (HEADER + "c1,-1,pass\n", ":2: trial '-1' is not a whole number ≥ 0"),
    "empty-trial.csv": (HEADER + "c1,,pass\n", ":2: missing field 'trial'"),
    "empty-label.csv": (HEADER + "c1,0,\n", ":2: label '' is not pass/fail"),
    "short-row.csv": (HEADER + "c1,0\n", ":2: missing field 'label' (3 columns in the header)"),
    "long-row.csv": (HEADER + "c1,0,pass,extra\n", ":2: 4 cells, the header names 3"),
    "huge-trial.csv": (HEADER + "c1," + "9" * 10_000 + ",pass\n", ":2: trial '99999"),
    "out-of-scale.csv": (HEADER + "c1,0,pass\nc2,0,4\n", ":3: label '4' is not pass/fail"),
    "conflicting-duplicate.csv": (HEADER + "c1,0,pass\nc1,0,fail\n", ":3: ('c1', 0, None) is labelled both pass and fail"),
    "no-header.csv": ("c1,0,pass\n", ":1: the header has no column 'case_id', 'trial', 'label'"),
    "empty.csv": ("", ": empty (need a header row naming case_id, trial, label)"),
    "latin-1.csv": (HEADER.encode() + "c1,0,réussi\n".encode("latin-1"), ":2: not UTF-8 text"),
    "inf-trial.jsonl": ('{"case_id": "c1", "trial": Infinity, "label": "pass"}\n', ":1: trial inf is not a whole number ≥ 0"),
    "float-trial.jsonl": ('{"case_id": "c1", "trial": 1.5, "label": "pass"}\n', ":1: trial 1.5 is not a whole number ≥ 0"),
    "bool-trial.jsonl": ('{"case_id": "c1", "trial": true, "label": "pass"}\n', ":1: trial True is not a whole number ≥ 0"),
    "nan-label.jsonl": ('{"case_id": "c1", "trial": 0, "label": NaN}\n', ":1: label nan is not pass/fail"),
    "huge-trial.jsonl": ('{"case_id": "c1", "trial": ' + "9" * 10_000 + ', "label": "pass"}\n', ":1: not a JSON line"),
    "a-list.jsonl": ("[1, 2]\n", ":1: not a JSON object (list)"),
}
BAD_JUDGMENTS = {
    "repeat.jsonl": ('{"case_id": "c1", "trial": 0, "passed": true, "repeat": "x"}\n', ":1: repeat 'x' is not a whole"),
    "score.jsonl": ('{"case_id": "c1", "trial": 0, "passed": true, "score": NaN}\n', ":1: score nan is not a whole"),
    "passed.jsonl": ('{"case_id": "c1", "trial": 0, "passed": 1e400}\n', ":1: passed inf is not pass/fail"),
    "copied-line.jsonl": ('{"case_id": "c1", "trial": 0, "passed": true}\n' * 2, ":2: ('c1', 0, None) repeat 0 again"),
}


def one_error_line(output: str, path: Path, expected: str) -> None:
    lines = output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}{expected}"), output
    assert len(lines[0]) < 300  # a 10,000-digit number is not quoted whole


def test_bad_label_and_judgment_files_are_one_line_naming_the_file_line_and_field(tmp_path: Path) -> None:
    judgments = tmp_path / "j.jsonl"
    judgments.write_text('{"case_id": "c1", "trial": 0, "passed": true}\n{"case_id": "c2", "trial": 0, "passed": false}\n')
    labels = tmp_path / "labels.csv"
    labels.write_text(HEADER + "c1,0,pass\nc2,0,fail\n")
    runner = CliRunner()

    def calibrate(*args: Path) -> Any:
        names = ("--labels", "--judgments", "--pairwise")
        pairs = zip(names[:len(args)], map(str, args), strict=True)
        return runner.invoke(main, ["calibrate", *(x for pair in pairs for x in pair)])

    for name, (content, expected) in BAD_LABELS.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        result = calibrate(path, judgments)
        assert result.exit_code == 2, (name, result.output)
        one_error_line(result.output, path, expected)
    for name, (content, expected) in BAD_JUDGMENTS.items():
        path = tmp_path / name
        path.write_text(content)
        result = calibrate(labels, path)
        assert result.exit_code == 2, (name, result.output)
        one_error_line(result.output, path, expected)
    pairwise = tmp_path / "pairwise.jsonl"
    pairwise.write_text('{"first_order": "A", "second_order": "C"}\n')
    one_error_line(calibrate(labels, judgments, pairwise).output, pairwise, ":1: second_order 'C' is not one of A, B")
    folder, fifo = tmp_path / "folder.csv", tmp_path / "fifo.csv"
    folder.mkdir()
    os.mkfifo(fifo)  # opened, it would wait for a writer for ever
    for path in (folder, fifo, tmp_path / "missing.csv"):
        for args in ((path, judgments), (labels, judgments, path)):
            result = calibrate(*args)
            assert result.exit_code == 2, result.output
            one_error_line(result.output, path, ": ")
    result = calibrate(labels, fifo)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {fifo}: is a named pipe (FIFO); expected a regular file"), result.output


def test_label_files_from_spreadsheets_and_repeated_rows_are_read(tmp_path: Path) -> None:
    """A byte-order mark (Excel's "CSV UTF-8") is not part of the first column's name; a row repeated with
    the same label is one item; a CSV judgments file's decided column is read as the word it is."""
    labels = tmp_path / "labels.csv"
    labels.write_bytes(b"\xef\xbb\xbf" + (HEADER + "c1,0,pass\nc1,0,pass\nc2,0,fail\n").encode())
    judgments = tmp_path / "judgments.csv"
    judgments.write_text("case_id,trial,passed,decided\nc1,0,pass,true\nc2,0,fail,false\n")
    result = CliRunner().invoke(main, ["calibrate", "--labels", str(labels), "--judgments", str(judgments), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["items"] == 2 and report["labels"] == 2 and report["judge_undecided"] == 1


RUBRIC = {"criteria": [{"name": "clear", "question": "Does the reply name the note id?",
                        "levels": {1: "no id", 5: "gives the id"}}]}


def test_judge_repeats_and_pairwise_feed_calibration(serve: Any, tmp_path: Path) -> None:
    def script(req: FakeRequest) -> Turn:
        if req.model == "judge-model":
            return naive_judge(good_if="note N-")(req)
        if req.model == "biased-judge":
            return first_position_judge(req)
        turns = [Turn(tool_calls=[ToolUse("add_note", {"title": "call mom", "priority": 2})]),
                 Turn(text="I added note N-1001. ###DONE###")]
        return turns[min(req.turn, 1)]

    server = serve(script)
    runner = CliRunner()
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        result = runner.invoke(main, ["run", str(notes_case(tmp_path, judge=RUBRIC)), "--agent", "openai:scripted-model",
                                      "--judge", "openai:judge-model", "--base-url", server.openai_url, "-k", "3",
                                      "--out", str(out), "-q"])
        assert result.exit_code == 0, result.output
        runs.append(out)
    judgments = tmp_path / "judgments.jsonl"
    result = runner.invoke(main, ["judge", str(runs[0]), "--judge", "openai:judge-model", "--base-url", server.openai_url,
                                  "--repeats", "2", "--out", str(judgments)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in judgments.read_text().splitlines()]
    assert sorted({(x["trial"], x["repeat"]) for x in lines}) == [(t, r) for t in range(3) for r in range(2)]
    pairwise = tmp_path / "pairwise.jsonl"
    result = runner.invoke(main, ["pairwise", str(runs[0]), str(runs[1]), "--judge", "openai:biased-judge",
                                  "--base-url", server.openai_url, "--out", str(pairwise)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert (summary["pairs"], summary["ties"], summary["swap_consistency"]) == (3, 3, 0.0)
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,trial,criterion,label\n" + "".join(f"add-note,{t},clear,pass\n" for t in range(3)))
    out = tmp_path / "calibration.json"
    for source in (runs[0], judgments):  # a run folder or a judgments file
        result = runner.invoke(main, ["calibrate", "--labels", str(labels), "--judgments", str(source), "--pairwise",
                                      str(pairwise), "--out", str(out), "--min-swap-consistency", "0.8"])
        report = json.loads(out.read_text())
        assert result.exit_code == 1 and report["items"] == 3 and report["percent_agreement"]["estimate"] == 1.0
        assert report["swap_consistency"]["estimate"] == 0.0 and report["judge"]["model"] == "judge-model"
    assert report["test_retest"] == {"estimate": 1.0, "items": 6}  # 3 trials × (criterion + overall), judged twice
