"""report.html without a browser: self-contained, summaries only, trial data split into per-case chunks."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main
from passhat.models import Manifest
from passhat.report.html import write_report
from passhat.report.trials import chunk_json
from passhat.results import summarize_run, tag_keys

ADD = re.compile(r"^passhat\.add\((\d+),(.*)\);$")


def chunk_trials(run: Path) -> dict[int, list[dict]]:
    folders = list((run / "report" / "trials").iterdir())
    assert len(folders) == 1 and folders[0].is_dir(), "one report's chunks; earlier reports' are removed"
    out: dict[int, list[dict]] = {}
    for path in sorted(folders[0].glob("c*.js")):
        for line in path.read_text("utf-8").splitlines():
            m = ADD.match(line)
            assert m, f"{path.name}: not a passhat.add statement: {line[:80]}"
            assert path.name == f"c{int(m.group(1)):05d}.js"
            out.setdefault(int(m.group(1)), []).append(json.loads(m.group(2)))
    return out


def test_run_writes_a_self_contained_report(hasty_run: Path) -> None:
    page = (hasty_run / "report.html").read_text("utf-8")
    assert re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) is None, "the page must not load anything remote"
    assert "<link" not in page and "@import" not in page and "<script src" not in page
    assert page.count('<circle class="pt pass-hat-k"') == 2 and page.count('<circle class="pt pass-at-k"') == 2
    assert "by scenario" in page and "by risk" in page, "strata default to every tag key"


def test_page_holds_summaries_and_chunks_hold_every_trial(hasty_run: Path) -> None:
    page = (hasty_run / "report.html").read_text("utf-8")
    records = [json.loads(line) for line in (hasty_run / "trials.jsonl").read_text("utf-8").splitlines()]
    chunks = chunk_trials(hasty_run)
    assert sum(len(v) for v in chunks.values()) == len(records) == 38
    assert "Dazhong Taxi" not in page, "tool results belong in the lazily loaded chunks"
    assert any("Dazhong Taxi" in json.dumps(t) for trials in chunks.values() for t in trials)
    row = re.search(r'<tr class="case fail" data-idx="(\d+)" data-chunk="([^"]+)" data-trials="2"\s+'
                    r'data-search="timeout-after-write .*?</tr>', page, re.S)
    assert row and "duplicate_write" in row.group(0) and "0/2" in row.group(0)
    stored = [r for r in records if r["case_id"] == "timeout-after-write"]
    loaded = chunks[int(row.group(1))]
    assert re.fullmatch(rf"report/trials/[0-9a-f]+/c{int(row.group(1)):05d}\.js", row.group(2))
    assert sorted(t["trial"] for t in loaded) == sorted(r["trial"] for r in stored)
    assert [c["tool"] for c in loaded[0]["calls"]] == [c["tool"] for c in stored[0]["calls"]]
    assert loaded[0]["seed"] == str(stored[0]["seed"]), "64-bit seeds travel as strings (JS numbers are doubles)"


def test_regenerating_rewrites_chunks_instead_of_appending(run_copy: Path) -> None:
    first = write_report(run_copy)
    again = write_report(run_copy)
    assert again.lazy_bytes == first.lazy_bytes and again.trials == 38
    assert sum(len(v) for v in chunk_trials(run_copy).values()) == 38


def test_fast_path_from_a_stratified_summary_writes_the_same_trials(run_copy: Path) -> None:
    rebuilt = chunk_trials(run_copy)  # written by `passhat run`: summary rebuilt with strata, records validated
    summarize_run(run_copy, by=tag_keys(Manifest.of_run(run_copy)))
    with (run_copy / "trials.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"case_id": "half a line from a killed write')
    copied = write_report(run_copy)
    assert copied.trials == 38 and chunk_trials(run_copy) == rebuilt


def test_report_command_and_no_report_flag(tmp_path: Path, run_copy: Path) -> None:
    (run_copy / "report.html").unlink()
    r = CliRunner().invoke(main, ["report", str(run_copy)])
    assert r.exit_code == 0, r.output
    assert (run_copy / "report.html").exists() and "38 trial(s)" in r.output
    bad = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert bad.exit_code == 2 and "not a run folder" in bad.output
    out = tmp_path / "plain"
    r = CliRunner().invoke(main, ["run", "reimbursement", "--agent", "careful", "--trials", "1", "--out", str(out),
                                  "-q", "--no-report", "--no-sanity"])
    assert r.exit_code == 0, r.output
    assert not (out / "report.html").exists() and not (out / "report").exists()


def test_a_stale_summary_json_is_recomputed_not_shown(run_copy: Path, careful_run: Path) -> None:
    # another run's summary.json copied in (or one left from before the run was resumed or edited): the page
    # showed its numbers beside this run's trials
    shutil.copyfile(careful_run / "summary.json", run_copy / "summary.json")
    r = CliRunner().invoke(main, ["report", str(run_copy)])
    assert r.exit_code == 0, r.output
    page = (run_copy / "report.html").read_text("utf-8")
    row = re.search(r'<tr class="case (\w+)" [^>]*data-search="timeout-after-write .*?</tr>', page, re.S)
    assert row and row.group(1) == "fail" and "0/2" in row.group(0), "hasty fails it; careful's summary says 2/2"


@pytest.mark.parametrize(("line", "said"), [
    (b"\n", "not a trial record (an empty line)"),
    (b"\x00\xffbinary\n", "not a trial record (Invalid JSON"),
])
def test_a_broken_line_fails_the_report_instead_of_leaving_a_trial_out(run_copy: Path, line: bytes, said: str) -> None:
    path = run_copy / "trials.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:3], line, *lines[3:]]))
    r = CliRunner().invoke(main, ["report", str(run_copy)])
    assert r.exit_code == 2, r.output
    assert f"trials.jsonl:4: {said}" in r.output and len(r.output.strip().splitlines()) == 1


def test_json_for_script_tags_cannot_close_the_tag() -> None:
    text = chunk_json({"reply": "</script><script>alert(1)</script>"})
    assert "</" not in text and json.loads(text)["reply"].startswith("</script>")


def test_a_run_killed_before_its_first_trial_still_gets_a_page(run_copy: Path) -> None:
    (run_copy / "trials.jsonl").write_text("", "utf-8")
    (run_copy / "summary.json").unlink()
    written = write_report(run_copy)
    page = written.path.read_text("utf-8")
    assert written.trials == 0 and "0 graded trials" in page and page.count('<tr class="case') == 19
    assert "<button class=\"expand\"" not in page, "nothing to expand without trials"


def assert_page_matches_its_chunks(run: Path) -> None:
    """Every case row the page announces trials for points at a chunk holding exactly that many."""
    page = (run / "report.html").read_text("utf-8")
    rows = re.findall(r'data-chunk="([^"]+)" data-trials="(\d+)"', page)
    assert rows
    for chunk, trials in rows:
        path = run / chunk
        assert path.is_file(), f"the page announces {trials} trial(s) in {chunk}, which is missing"
        assert len(path.read_text("utf-8").splitlines()) == int(trials), chunk


def test_a_report_killed_half_way_leaves_the_previous_page_and_its_chunks(run_copy: Path, monkeypatch: Any) -> None:
    from passhat.report.trials import TrialData

    assert_page_matches_its_chunks(run_copy)
    before = (run_copy / "report.html").read_bytes()

    def killed(self: TrialData) -> None:  # half the chunks written, then the process dies (no clean-up)
        for idx, lines in list(self._pending.items())[: len(self._pending) // 2]:
            with (self.trials_dir / f"c{idx:05d}.js").open("ab") as fh:
                fh.write(b"".join(lines[:1]))
        raise KeyboardInterrupt

    monkeypatch.setattr(TrialData, "flush", killed)
    monkeypatch.setattr(TrialData, "discard", lambda self: None, raising=False)
    with pytest.raises(KeyboardInterrupt):
        write_report(run_copy)
    assert (run_copy / "report.html").read_bytes() == before
    assert_page_matches_its_chunks(run_copy)
    monkeypatch.undo()
    write_report(run_copy)  # the next report replaces the page and removes the leftovers
    assert_page_matches_its_chunks(run_copy)
    assert sum(len(v) for v in chunk_trials(run_copy).values()) == 38


def test_report_files_are_replaced_whole_or_not_at_all(tmp_path: Path, monkeypatch: Any) -> None:
    import errno
    import os

    from passhat.report.files import write_atomic

    page = tmp_path / "report.html"
    write_atomic(page, "old")

    def full(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", dst)

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError):
        write_atomic(page, "new " * 1000)
    assert page.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["report.html"]
