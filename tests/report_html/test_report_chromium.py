"""report.html in headless Chromium: curves drawn, a trial's trajectory loaded from its chunk on click.

Uses the system Chromium through Playwright (never a downloaded browser); skipped with the reason when
either is missing. Screenshots go to tests/artifacts/ (git-ignored) for a person to look at.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from passhat.report.html import write_report

ARTIFACTS = Path(__file__).parents[1] / "artifacts"


def open_page(browser: Any, report: Path) -> tuple[Any, list[str], list[str]]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("request", lambda req: requests.append(req.url))
    page.goto(report.resolve().as_uri())
    return page, errors, requests


def stored_trial(run: Path, case_id: str, trial: int) -> dict[str, Any]:
    for line in (run / "trials.jsonl").read_text("utf-8").splitlines():
        record = json.loads(line)
        if record["case_id"] == case_id and record["trial"] == trial:
            return record
    raise AssertionError(f"no record {case_id}/{trial}")


def test_curves_and_a_trajectory_on_demand(browser: Any, hasty_run: Path) -> None:
    page, errors, requests = open_page(browser, hasty_run / "report.html")
    assert page.locator("svg.curve circle.pt.pass-hat-k").count() == 2
    assert page.locator("svg.curve circle.pt.pass-at-k").count() == 2
    assert page.locator("svg.curve polygon.band").count() == 2
    assert page.locator("#case-table tr.case").count() == 19
    assert page.locator("table.steps").count() == 0, "no trajectory is in the page before a click"
    chunks_before = [u for u in requests if "/report/trials/" in u]
    assert chunks_before == []

    row = page.locator("#case-table tr.case", has_text="timeout-after-write")
    row.locator("button.expand").click()
    page.locator("tr.detail details.trial").first.wait_for()
    page.locator("tr.detail details.trial[data-trial='0'] > summary").click()
    steps = page.locator("tr.detail table.steps").first
    steps.wait_for()

    record = stored_trial(hasty_run, "timeout-after-write", 0)
    assert steps.locator("td.tool").all_text_contents() == [c["tool"] for c in record["calls"]]
    culprit = steps.locator("tr.culprit")
    assert culprit.count() == 1 and culprit.get_attribute("data-step") == str(record["failure"]["step"])
    assert "drop_response" in steps.inner_text(), "the injected fault is shown on its step"
    detail = page.locator("tr.detail").first.inner_text()
    assert "duplicate_write" in detail and "World diff" in detail and "row_count" in detail
    assert len([u for u in requests if "/report/trials/" in u]) == 1, "exactly one chunk loaded, on demand"
    assert all(u.startswith("file://") for u in requests), f"the page reached out: {requests}"
    assert errors == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    page.locator("tr.detail").first.screenshot(path=str(ARTIFACTS / "report-trajectory.png"))
    page.close()


def test_agent_text_is_shown_as_text_never_run(browser: Any, run_copy: Path) -> None:
    payload = '<img src=x onerror="window.pwned=1"></script><b>bold</b>'
    lines = (run_copy / "trials.jsonl").read_text("utf-8").splitlines()
    out = []
    for line in lines:
        record = json.loads(line)
        if record["case_id"] == "timeout-after-write":
            record["calls"][0]["result"] = payload
            record["reply"] = payload
            record["messages"][-1]["text"] = payload
        out.append(json.dumps(record))
    (run_copy / "trials.jsonl").write_text("\n".join(out) + "\n", "utf-8")
    write_report(run_copy)
    page, errors, _ = open_page(browser, run_copy / "report.html")
    page.locator("#case-table tr.case", has_text="timeout-after-write").locator("button.expand").click()
    page.locator("tr.detail details.trial[data-trial='0'] > summary").click()
    page.locator("tr.detail table.steps").wait_for()
    assert payload in page.locator("tr.detail").inner_text()
    assert page.evaluate("window.pwned") is None and page.locator("tr.detail b", has_text="bold").count() == 0
    assert errors == []
    page.close()


def test_filter_hides_passing_cases(browser: Any, hasty_run: Path) -> None:
    page, _, _ = open_page(browser, hasty_run / "report.html")
    page.locator("#failing-only").check()
    assert page.locator("#case-table tr.case:not(.hidden)").count() == 9
    page.locator("#filter").fill("permission")
    visible = page.locator("#case-table tr.case:not(.hidden)")
    assert sorted(t.split()[0] for t in visible.locator("td:nth-child(2)").all_inner_texts()) == [
        "approve-own-ticket", "colleague-invoice"]
    page.close()


def test_a_workspace_trial_shows_its_file_changes(browser: Any, tmp_path: Path) -> None:
    """The bugfix suite's hasty agent edits a test: the trial shows the file and its text diff, lines coloured."""
    from click.testing import CliRunner

    from passhat.cli import main

    run = tmp_path / "bugfix"
    args = ["run", "bugfix", "--agent", "hasty", "--trials", "1", "--tag", "bug=off-by-one", "--out", str(run), "-q"]
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps an event loop running in this thread
        result = pool.submit(CliRunner().invoke, main, args).result()
    assert result.exit_code == 0, result.output  # no gate: failing cases are the report's, not the exit code's
    page, errors, _ = open_page(browser, run / "report.html")
    page.locator("#case-table tr.case", has_text="median-even").locator("button.expand").click()
    page.locator("tr.detail details.trial[data-trial='0'] > summary").click()
    files = page.locator("tr.detail div.diff.files")
    files.wait_for()
    text = files.inner_text()
    record = stored_trial(run, "median-even", 0)
    assert [c["path"] for c in record["files"]["changes"]] == ["tests/test_stats.py"]
    assert "modified" in text and "tests/test_stats.py" in text
    assert files.locator("pre.udiff span.del").count() >= 1 and files.locator("pre.udiff span.ins").count() >= 1
    assert "File changes" in page.locator("tr.detail").first.inner_text()
    assert errors == []
    page.close()


def test_a_fault_that_did_not_apply_and_an_abandoned_call_are_shown_on_their_steps(browser: Any, run_copy: Path) -> None:
    """Issue 24: the trajectory said a fault was injected when it changed nothing, and showed an answer the
    agent never got as a plain success."""
    lines = (run_copy / "trials.jsonl").read_text("utf-8").splitlines()
    out = []
    for line in lines:
        record = json.loads(line)
        if record["case_id"] == "timeout-after-write" and record["trial"] == 0:
            record["calls"][0].update(fault="malformed on query_invoices call 1",
                                      fault_not_applied="no field 'ammount' in the result (fields: invoice_id, amount)")
            record["calls"][1].update(abandoned=True, abandoned_when="before", abandoned_at=0.01)
        out.append(json.dumps(record))
    (run_copy / "trials.jsonl").write_text("\n".join(out) + "\n", "utf-8")
    write_report(run_copy)
    page, errors, _ = open_page(browser, run_copy / "report.html")
    page.locator("#case-table tr.case", has_text="timeout-after-write").locator("button.expand").click()
    page.locator("tr.detail details.trial[data-trial='0'] > summary").click()
    steps = page.locator("tr.detail table.steps")
    steps.wait_for()
    first, second = steps.locator("tbody tr").nth(0).inner_text(), steps.locator("tbody tr").nth(1).inner_text()
    assert "⚠ not applied: no field 'ammount' in the result" in first
    assert "⚠ abandoned: the client went away before the tool ran; the agent never saw this answer" in second
    assert errors == []
    page.close()


def test_a_planned_fault_no_call_reached_is_shown_on_its_case_and_its_trial(browser: Any, run_copy: Path) -> None:
    """A trial that never reached a planned fault did not test it: the case row counts such trials (summary.json's
    faults_not_reached) and the trial's trajectory names the fault, where a fault that did not apply is shown."""
    out = []
    planned = None
    for line in (run_copy / "trials.jsonl").read_text("utf-8").splitlines():
        record = json.loads(line)
        if record["case_id"] == "timeout-after-write" and record["trial"] == 0:
            (acted,) = [c for c in record["calls"] if c["fault"]]
            planned = acted["fault"]
            acted.update(fault=None, fault_kind=None)  # as if the agent had never made that call
        out.append(json.dumps(record))
    (run_copy / "trials.jsonl").write_text("\n".join(out) + "\n", "utf-8")
    write_report(run_copy)
    page, errors, _ = open_page(browser, run_copy / "report.html")
    row = page.locator("#case-table tr.case", has_text="timeout-after-write")
    assert f"⚠ {planned} — never reached in 1 of 2 graded trial(s)" in row.inner_text()
    row.locator("button.expand").click()
    first = page.locator("tr.detail details.trial[data-trial='0'] > summary")
    first.wait_for()
    assert "⚠ 1 planned fault(s) never reached" in first.inner_text()
    assert "never reached" not in page.locator("tr.detail details.trial[data-trial='1'] > summary").inner_text()
    first.click()
    note = page.locator("tr.detail div.not-reached")
    note.wait_for()
    assert note.inner_text() == f"⚠ never reached: {planned} — no call of this trial got to it, so the trial did not test it"
    assert errors == []
    page.close()
