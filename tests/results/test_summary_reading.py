"""Summaries read only what they use, and ``passhat show`` reuses a current summary.json (issue 13).

Speed itself is measured by ``bench/bench_summary.py``; these tests pin what makes it fast without
changing a number: the tally fields equal whole records, no per-case binomial test, no 10,000-row table.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from passhat.cli import main
from passhat.errors import RunError
from passhat.report.terminal import MAX_CASE_ROWS, print_summary
from passhat.results import build_summary, current_summary
from passhat.results.tally import tally, tally_records
from passhat.runner import RunStore


def test_tally_fields_give_the_same_summary_as_whole_records(run_notes: Any) -> None:
    out = run_notes("good", trials=3)
    store = RunStore(out)
    whole = build_summary(store.iter_records(), store.manifest(), by=["scenario"])
    fields = build_summary(tally_records(store.trials_path), store.manifest(), by=["scenario"])
    assert fields == whole
    assert {k: vars(v) for k, v in tally(tally_records(store.trials_path)).items()} == \
        {k: vars(v) for k, v in tally(store.iter_records()).items()}


def test_tally_fields_keep_the_store_rules_for_broken_lines(run_notes: Any) -> None:
    out = run_notes("good", trials=2)
    path = RunStore(out).trials_path
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines) + b'{"case_id": "half')  # a write killed mid-way: skipped
    assert len(list(tally_records(path))) == len(lines)
    path.write_bytes(lines[0] + b"not json\n" + b"".join(lines[1:]))
    with pytest.raises(RunError, match=r"trials.jsonl:2: not a trial record"):
        list(tally_records(path))


def test_summary_does_not_run_a_binomial_test_per_case(run_notes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # scipy's binomtest(...).proportion_ci cost 0.9 ms per case: 9 of the 15 s of a 10,000-case summary.
    # clopper_pearson (the scalar exact interval, now without binomtest) is the per-case call to keep out.
    import passhat.stats
    import passhat.stats.intervals as intervals

    calls = []
    real = intervals.clopper_pearson
    for module in (intervals, passhat.stats):
        monkeypatch.setattr(module, "clopper_pearson", lambda *a, **k: calls.append(a) or real(*a, **k))
    store = RunStore(run_notes("good", trials=3))
    build_summary(store.iter_records(), store.manifest())
    assert calls == []


def test_show_reuses_a_current_summary_and_recomputes_a_stale_one(run_notes: Any) -> None:
    out = run_notes("good", trials=3)
    store = RunStore(out)
    summary = build_summary(tally_records(store.trials_path), store.manifest(), by=["scenario"])
    store.write_summary(summary)
    assert current_summary(out) == summary and current_summary(out, ["scenario"]) == summary
    assert current_summary(out, ["risk"]) is None  # a stratum it does not hold
    # show prints summary.json as it is: mark it, and the mark shows
    marked = summary.model_copy(update={"agent": "from-summary-json"})
    store.write_summary(marked)
    assert "from-summary-json" in CliRunner().invoke(main, ["show", str(out)]).output
    assert "from-summary-json" not in CliRunner().invoke(main, ["show", str(out), "--recompute"]).output
    # a record appended after the summary makes it stale
    lines = store.trials_path.read_bytes().splitlines(keepends=True)
    store.trials_path.write_bytes(b"".join(lines) + lines[0])
    os.utime(out / "summary.json", ns=(store.trials_path.stat().st_mtime_ns + 10**9,) * 2)  # even if newer
    assert current_summary(out) is None
    assert "from-summary-json" not in CliRunner().invoke(main, ["show", str(out)]).output
    # a summary written by an older passhat (passhat.summary/2 said so under "format") is recomputed
    store.trials_path.write_bytes(b"".join(lines))
    old = {**{k: v for k, v in marked.to_dict().items() if k != "schema_version"}, "format": "passhat.summary/2"}
    (out / "summary.json").write_text(json.dumps(old))
    assert current_summary(out) is None
    assert "from-summary-json" not in CliRunner().invoke(main, ["show", str(out)]).output


def test_a_large_suite_lists_its_least_reliable_cases(run_notes: Any) -> None:
    store = RunStore(run_notes("good", trials=2))
    summary = build_summary(store.iter_records(), store.manifest())
    case = summary.cases[0]
    many = [case.model_copy(update={"id": f"c{i:03d}", "successes": i % 3}) for i in range(150)]
    big = summary.model_copy(update={"cases": many, "suite": summary.suite.model_copy(update={"cases": 150})})
    console = Console(file=io.StringIO(), width=250)
    print_summary(big, console)
    text = console.file.getvalue()
    assert f"the {MAX_CASE_ROWS} least reliable of 150 cases" in text
    assert text.count("│ c") == MAX_CASE_ROWS and "c000" in text and "c002" not in text  # 0/2 first, not 2/2


def test_show_trusts_the_size_passhat_recorded_and_refuses_an_edited_summary(run_notes: Any) -> None:
    # issue 22: show of a finished run does not count 1.3 GB of lines; issue 20: it reads summary.json through
    # its model, so a file edited into another shape is refused, naming the file and field (docs/design/030).
    import passhat
    from passhat.results import summarize_run
    from passhat.results.written import written_summary

    out = run_notes("good", trials=2)
    store = RunStore(out)
    summarize_run(out)
    data = json.loads((out / "summary.json").read_text())
    assert data["trials_bytes"] == store.trials_path.stat().st_size
    written = written_summary(out)
    assert written is not None and written.to_dict() == data
    # a record appended later changes the size: stale, even with summary.json touched to look newer
    lines = store.trials_path.read_bytes().splitlines(keepends=True)
    store.trials_path.write_bytes(b"".join(lines) + lines[0])
    os.utime(out / "summary.json", ns=(store.trials_path.stat().st_mtime_ns + 10**9,) * 2)
    assert written_summary(out) is None and current_summary(out) is None
    store.trials_path.write_bytes(b"".join(lines))
    summarize_run(out)
    # a field edited by hand into nonsense is refused by show (the old --validate is accepted, and checks the same);
    # the library recomputes it, as a summary is derived data
    (out / "summary.json").write_text(json.dumps({**data, "agent": "edited", "suite": {**data["suite"], "cases": "x"}}))
    os.utime(out / "summary.json", ns=(store.trials_path.stat().st_mtime_ns + 10**9,) * 2)
    for argv in (["show", str(out)], ["show", str(out), "--validate"]):
        checked = CliRunner().invoke(main, argv)
        assert checked.exit_code == 2 and "summary.json: suite.cases" in checked.output, checked.output
        assert "`passhat show --recompute` recomputes it" in checked.output and "pass^k" not in checked.output
    assert passhat.Run.open(out).summary.agent == "good" and current_summary(out) is None
    assert CliRunner().invoke(main, ["show", str(out), "--recompute"]).exit_code == 0
    broken = {**data, "suite": {k: v for k, v in data["suite"].items() if k != "trials_per_case"}}
    (out / "summary.json").write_text(json.dumps(broken))
    os.utime(out / "summary.json", ns=(store.trials_path.stat().st_mtime_ns + 10**9,) * 2)
    shown = CliRunner().invoke(main, ["show", str(out)])
    assert shown.exit_code == 2 and "summary.json: suite.trials_per_case: Field required" in shown.output
    assert "pass^k" not in shown.output
