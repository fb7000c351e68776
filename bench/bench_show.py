"""Time ``passhat show`` on a finished run of 10,000 cases × 16 trials in a fresh interpreter (issue 22 item 6).

Run: ``python bench/bench_show.py`` (``--cases``/``--trials`` to resize, ``--folder DIR`` to keep or reuse the
run, ``--src DIR`` (repeatable) to time another checkout's ``passhat``, e.g. ``--src /work/main/src`` for
before/after).

The run folder is written by passhat's own writers, as ``passhat run`` leaves it: the manifest of a real
two-trial run of the built-in ``reimbursement`` suite widened to the synthetic cases
(``RunStore.write_manifest``), real records of that run copied onto the cases, whose pass rates are
p ~ Beta(4, 1.5), through ``TrialRecord`` and ``RunStore.write_lines``, and the summary with every tag as a
stratum (``summarize_run``, what the end of ``passhat run`` calls).

Each timing is a new ``python -m passhat show FOLDER`` process (best and median of ``--repeat``, and the median
CPU time, which is what to compare on a shared machine): the cost a user pays, imports included. The goal
(issue 22) is ≤ 2 s; before it, show took 4.1–4.6 s, of which 2.0 s imported scipy. Since issue 20, show reads
summary.json and manifest.json through their models, validated from their bytes (docs/design/030). The
script also reports whether scipy was imported (``-X importtime``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "src"


def build_run(folder: Path, cases: int, trials: int) -> None:
    """A finished run folder of ``cases`` × ``trials`` records and its summary.json (module docstring)."""
    from click.testing import CliRunner

    from passhat.cli import main
    from passhat.results import summarize_run, tag_keys
    from passhat.runner import RunStore, TrialRecord

    with tempfile.TemporaryDirectory() as tmp:
        real = Path(tmp) / "real"
        r = CliRunner().invoke(main, ["run", "reimbursement", "--agent", "hasty", "--trials", "2", "--out", str(real),
                                      "-q", "--no-report", "--no-sanity"])
        assert r.exit_code in (0, 1, 3), r.output
        source = RunStore(real)
        records = list(source.iter_records())
        manifest = source.manifest()
    passes = [x for x in records if x.outcome == "pass"]
    fails = [x for x in records if x.outcome == "fail"]
    rng = random.Random(0)
    ids = [f"case-{i:05d}" for i in range(cases)]
    template = next(iter(manifest.suite.case_meta.values()))
    meta = {c: template.model_copy(update={"group": None, "tags": {
        "scenario": rng.choice(["normal", "permission", "fault"]), "risk": rng.choice(["high", "low"])}}) for c in ids}
    suite = manifest.suite.model_copy(update={"cases": {c: f"h{c}" for c in ids}, "case_meta": meta})
    store = RunStore(folder)
    store.write_manifest(manifest.model_copy(update={"trials": trials, "status": "complete", "suite": suite}))
    # Encode each template record once; a copy differs only in case_id and trial, which are re-encoded.
    encoded = {id(r): json.loads(store.encode(r)) for r in passes + fails}
    store.open_for_append()
    try:
        for cid in ids:
            p = rng.betavariate(4, 1.5)
            batch = []
            for t in range(trials):
                template_record = rng.choice(passes if rng.random() < p else fails)
                data = {**encoded[id(template_record)], "case_id": cid, "trial": t}
                batch.append(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
            store.write_lines(b"".join(batch))
    finally:
        store.close()
    TrialRecord.model_validate(json.loads(store.trials_path.open().readline()))  # the copies are records
    summarize_run(folder, by=tag_keys(store.manifest()))


def time_show(folder: Path, src: Path, repeat: int) -> tuple[float, float, float, bool, int]:
    """(best, median) wall seconds and median CPU seconds (user + system) of ``python -m passhat show FOLDER`` with
    ``src`` first on PYTHONPATH, whether that process imported scipy, and its exit code. CPU time is what to
    compare on a shared machine: wall time there includes waiting for a core."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, "-m", "passhat", "show", str(folder)]
    times, cpu = [], []
    code = 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        code = done.returncode
    probe = subprocess.run([sys.executable, "-X", "importtime", *command[1:]], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, check=False)
    scipy = any(line.rsplit("|", 1)[-1].strip() == "scipy" for line in probe.stderr.splitlines())
    return min(times), statistics.median(times), statistics.median(cpu), scipy, code


def main_() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--folder", type=Path, help="keep (or reuse) the run here")
    parser.add_argument("--src", type=Path, action="append",
                        help="a checkout's src/ to time (repeatable; default: /work/main/src if present, and this one)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sources = args.src or [p for p in (Path("/work/main/src"), HERE) if p.is_dir()]
    tmp = None
    folder = args.folder
    if folder is None:
        tmp = tempfile.mkdtemp(prefix="passhat-bench-show-")
        folder = Path(tmp) / "run"
    try:
        if not (folder / "summary.json").exists():
            start = time.perf_counter()
            build_run(folder, args.cases, args.trials)
            print(f"built {folder} in {time.perf_counter() - start:.1f} s")
        size = (folder / "trials.jsonl").stat().st_size
        summary = (folder / "summary.json").stat().st_size
        print(f"{args.cases} cases × {args.trials} trials: trials.jsonl {size / 1e9:.2f} GB, "
              f"summary.json {summary / 1e6:.1f} MB; each timing is a fresh interpreter, {args.repeat} repeats\n")
        print(f"{'passhat from':<44} {'best s':>7} {'median s':>9} {'CPU s':>6} {'scipy':>6} {'exit':>5}  goal ≤ 2 s")
        rows = []
        for src in sources:
            best, median, cpu, scipy, code = time_show(folder, src, args.repeat)
            rows.append((median, cpu))
            print(f"{str(src):<44} {best:7.2f} {median:9.2f} {cpu:6.2f} {'yes' if scipy else 'no':>6} {code:5d}  "
                  f"{'met' if median <= 2 else 'NOT met'}")
        if len(rows) == 2:
            print(f"\nafter / before (median wall): {rows[1][0] / rows[0][0]:.2f}; (median CPU): {rows[1][1] / rows[0][1]:.2f}")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main_()
