"""Time summary.json, ``passhat show`` and the gate's case rules on 10,000 cases × 16 trials (issue 13).

Run: ``python bench/bench_summary.py`` (``--cases``/``--trials`` to resize, ``--folder DIR`` to keep or
reuse the synthetic run, which is ≈ 1.2 GB). The records are realistic: real records of the built-in
``reimbursement`` suite (grades, calls with results, messages, spans; ≈ 7.6 KB each) copied onto
synthetic cases whose pass rates are p ~ Beta(4, 1.5), tagged with two tags (the report's strata).

Prints seconds for: reading the records whole (``RunStore.iter_records``, what ``run`` still does) and
reading only the tally fields (``tally_records``); the summary statistics from tallies, without and with
strata; the whole summary from the folder; ``passhat show`` end to end; and the gate's case rules.
The goal (issue 13) is ≤ 2 s for the summary and for show. Before issue 13 the summary statistics took
15 s, show 84–99 s and the case rules 5.3 s at this size.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from passhat.cli import main
from passhat.compare import load_run
from passhat.gate.context import GateInput
from passhat.gate.model import CaseSuccessRate, NeverFails, PassHatK
from passhat.gate.rules_cases import case_success_rate, never_fails, suite_pass_k
from passhat.results import build_summary, summarize_run, tag_keys
from passhat.results.tally import tally, tally_records
from passhat.runner import RunStore


def timed(label: str, fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    print(f"{label:<64} {seconds:7.2f} s", flush=True)
    return result, seconds


def build_run(folder: Path, cases: int, trials: int) -> None:
    """A run folder of ``cases`` × ``trials`` realistic records (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        real = Path(tmp) / "real"
        r = CliRunner().invoke(main, ["run", "reimbursement", "--agent", "hasty", "--trials", "2", "--out", str(real),
                                      "-q", "--no-report", "--no-sanity"])
        assert r.exit_code in (0, 1, 3), r.output
        lines = [json.loads(x) for x in (real / "trials.jsonl").read_text().splitlines()]
        manifest = json.loads((real / "manifest.json").read_text())
    passes = [x for x in lines if x["outcome"] == "pass"]
    fails = [x for x in lines if x["outcome"] == "fail"]
    rng = random.Random(0)
    ids = [f"case-{i:05d}" for i in range(cases)]
    template = next(iter(manifest["suite"]["case_meta"].values()))
    manifest["trials"], manifest["status"] = trials, "complete"
    manifest["suite"]["cases"] = {c: f"h{c}" for c in ids}
    manifest["suite"]["case_meta"] = {
        c: {**template, "group": None, "tags": {"scenario": rng.choice(["normal", "permission", "fault"]),
                                               "risk": rng.choice(["high", "low"])}} for c in ids}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with (folder / "trials.jsonl").open("w") as fh:
        for cid in ids:
            p = rng.betavariate(4, 1.5)
            for t in range(trials):
                rec = {**rng.choice(passes if rng.random() < p else fails), "case_id": cid, "trial": t}
                fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")


def main_() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--folder", type=Path, help="keep (or reuse) the synthetic run here")
    parser.add_argument("--skip-whole", action="store_true", help="skip reading whole records (≈ 25 s or more)")
    args = parser.parse_args()
    tmp = None
    folder = args.folder
    if folder is None:
        tmp = tempfile.mkdtemp(prefix="passhat-bench-")
        folder = Path(tmp) / "run"
    try:
        if not (folder / "trials.jsonl").exists():
            _, seconds = timed(f"build the synthetic run ({args.cases} × {args.trials})",
                               lambda: build_run(folder, args.cases, args.trials))
        size = (folder / "trials.jsonl").stat().st_size
        store = RunStore(folder)
        manifest = store.manifest()
        keys = tag_keys(manifest)
        print(f"{folder}: {args.cases} cases × {args.trials} trials, trials.jsonl {size / 1e9:.2f} GB, strata {keys}")
        ids = list(manifest.suite.cases)
        if not args.skip_whole:
            timed("read whole records (RunStore.iter_records) and tally", lambda: tally(store.iter_records(), ids))
        _, t_read = timed("read the tally fields (tally_records) and tally",
                          lambda: tally(tally_records(store.trials_path), ids))
        fields = list(tally_records(store.trials_path))
        _, t_plain = timed("summary statistics from the records, no strata", lambda: build_summary(fields, manifest))
        _, t_strata = timed(f"summary statistics from the records, strata by {', '.join(keys)}",
                            lambda: build_summary(fields, manifest, by=keys))
        fields.clear()
        _, t_folder = timed("summary.json from the folder (read fields + statistics + strata)",
                            lambda: summarize_run(folder, by=keys))

        def show(*extra: str) -> None:
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                result = CliRunner().invoke(main, ["show", str(folder), *extra])
            assert result.exit_code == 0, result.output

        _, t_show = timed("passhat show, finished run (summary.json is current)", show)
        _, t_recompute = timed("passhat show --recompute (reads trials.jsonl)", lambda: show("--recompute"))
        run = load_run(folder)
        inp = GateInput(run, None, None, folder, 0.05)
        rules = [(never_fails, NeverFails()), (case_success_rate, CaseSuccessRate(min=0.5)),
                 (suite_pass_k, PassHatK(k=8, min=0.1))]
        _, t_rules = timed("gate case rules (never_fails, case_success_rate, pass_hat_k)",
                           lambda: [fn(model, inp, 0.05) for fn, model in rules])
        print(f"\ngoal ≤ 2 s: show {t_show:.2f} s ({'met' if t_show <= 2 else 'NOT met'}); summary statistics "
              f"{t_plain:.2f} s ({t_strata:.2f} s with strata: {'met' if t_strata <= 2 else 'NOT met'}); reading the "
              f"fields of {size / 1e9:.1f} GB of records {t_read:.2f} s, so summary.json from the folder {t_folder:.2f} s "
              f"and show --recompute {t_recompute:.2f} s; case rules {t_rules:.2f} s")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main_()
