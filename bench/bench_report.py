"""How fast the HTML report is for a 10,000-trial run, and how small its first page stays.

Builds a synthetic run from real records: the built-in reimbursement suite is run once with ``careful``
(passing trajectories) and once with ``hasty`` (failing ones, with faults, diffs and failure
categories); each of CASES synthetic cases copies one built-in case and passes each of its TRIALS
trials with its own probability, so curves, strata and categories look like a real run. Then it
times ``write_report`` twice — rebuilding the summary with strata by every tag (what ``passhat run``
does without ``--by``) and from a summary.json that already has strata — and prints the size of
report.html against the trial data it loads on demand.

    python bench/bench_report.py [--cases 625] [--trials 16] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from passhat.report.html import tag_keys, write_report
from passhat.results import summarize_run
from passhat.runner.records import TrialRecord
from passhat.runner.store import MANIFEST, TRIALS, RunStore


def builtin_run(folder: Path, agent: str) -> Path:
    subprocess.run([sys.executable, "-m", "passhat", "run", "reimbursement", "--agent", agent, "--trials", "1",
                    "--out", str(folder), "-q", "--no-sanity", "--no-report"], check=True, capture_output=True)
    return folder


def synthesize(out: Path, templates: Path, cases: int, trials: int, seed: int = 7) -> int:
    """Write manifest.json and trials.jsonl of a run with ``cases`` × ``trials`` realistic trials."""
    rng = random.Random(seed)
    passing = {r.case_id: r for r in RunStore(builtin_run(templates / "careful", "careful")).iter_records()}
    failing = {r.case_id: r for r in RunStore(builtin_run(templates / "hasty", "hasty")).iter_records()}
    manifest = json.loads((templates / "hasty" / MANIFEST).read_text("utf-8"))
    base_ids = sorted(passing)
    meta = manifest["suite"]["case_meta"]
    ids = [f"{base_ids[i % len(base_ids)]}-{i:05d}" for i in range(cases)]
    manifest["suite"]["cases"] = {cid: f"{i:064x}" for i, cid in enumerate(ids)}
    manifest["suite"]["case_meta"] = {cid: meta[base_ids[i % len(base_ids)]] for i, cid in enumerate(ids)}
    manifest["trials"] = trials
    out.mkdir(parents=True)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2), "utf-8")
    order = [(i, t) for i in range(cases) for t in range(trials)]
    rng.shuffle(order)  # records arrive in completion order, not grouped by case
    p_pass = [rng.betavariate(3, 1) for _ in range(cases)]
    with (out / TRIALS).open("w", encoding="utf-8") as fh:
        for i, t in order:
            base = base_ids[i % len(base_ids)]
            template: TrialRecord = passing[base] if rng.random() < p_pass[i] else failing[base]
            record = template.model_copy(update={"case_id": ids[i], "trial": t, "seed": rng.getrandbits(63)})
            fh.write(record.model_dump_json() + "\n")
    return cases * trials


def open_in_chromium(report: Path) -> tuple[float, float] | None:
    """Seconds to the page's load event and to a case's trials shown after a click (None without Chromium)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path("/usr/bin/chromium").exists():
        return None
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.goto(report.as_uri(), wait_until="load")
        load_s = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000
        t0 = time.perf_counter()
        page.locator("button.expand").first.click()
        page.locator("details.trial").first.wait_for()
        expand_s = time.perf_counter() - t0
        browser.close()
    return load_s, expand_s


def mib(n: int) -> str:
    return f"{n / 1024 / 1024:.2f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=625)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--keep", type=Path, default=None, help="Leave the synthetic run here (to open report.html).")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="passhat-bench-report-"))
    run = (args.keep or tmp / "run").resolve()
    if run.exists():
        shutil.rmtree(run)
    try:
        t0 = time.perf_counter()
        n = synthesize(run, tmp, args.cases, args.trials)
        records_bytes = (run / TRIALS).stat().st_size
        print(f"synthetic run: {args.cases} cases × {args.trials} trials = {n} trials, trials.jsonl {mib(records_bytes)} "
              f"(built in {time.perf_counter() - t0:.1f}s)")
        keys = tag_keys(RunStore(run).manifest())
        t0 = time.perf_counter()
        cold = write_report(run)
        cold_s = time.perf_counter() - t0
        print(f"report, summary rebuilt with strata by {len(keys)} tag(s): {cold_s:.2f}s")
        summarize_run(run, by=keys)
        t0 = time.perf_counter()
        warm = write_report(run)
        warm_s = time.perf_counter() - t0
        print(f"report from summary.json (strata present):  {warm_s:.2f}s  ({n / warm_s:,.0f} trials/s)")
        chunks = len(list((run / "report" / "trials").rglob("*.js")))
        print(f"initial page report.html: {mib(warm.page_bytes)}")
        print(f"lazy trial data: {mib(warm.lazy_bytes)} in {chunks} chunk files "
              f"(largest {mib(max(p.stat().st_size for p in (run / 'report' / 'trials').rglob('*.js')))})")
        print(f"ratio initial page / lazy data: 1 : {warm.lazy_bytes / warm.page_bytes:.0f}; "
              f"page per trial {warm.page_bytes / n:.0f} B vs record {records_bytes / n:.0f} B")
        opened = open_in_chromium(run / "report.html")
        if opened:
            print(f"headless Chromium: page loaded in {opened[0]:.2f}s; a case's {args.trials} trials shown "
                  f"{opened[1]:.2f}s after the click")
        assert cold.trials == warm.trials == n
        if args.keep:
            print(f"open {run / 'report.html'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
