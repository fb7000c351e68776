"""summary.json: numbers equal an independent recomputation from trials.jsonl; intervals and strata."""

from __future__ import annotations

import json
import shutil
from math import comb
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from passhat.cli import main
from passhat.results import build_summary
from passhat.runner import RunStore

NOTES = Path(__file__).parents[1] / "data" / "notes"


def recompute(out: Path) -> dict[str, Any]:
    """Independent of passhat.stats: counts from the raw JSON lines, math.comb for the estimators."""
    counts: dict[str, list[int]] = {}
    for line in (out / "trials.jsonl").read_text().splitlines():
        rec = json.loads(line)
        c = counts.setdefault(rec["case_id"], [0, 0, 0])
        c[{"pass": 0, "fail": 1, "error": 2}[rec["outcome"]]] += 1
    cases = {}
    for cid, (p, f, e) in counts.items():
        n = p + f
        cases[cid] = {"n": n, "successes": p, "errors": e,
                      "hat": {k: comb(p, k) / comb(n, k) for k in range(1, n + 1)},
                      "at": {k: 1 - comb(n - p, k) / comb(n, k) for k in range(1, n + 1)}}
    return cases


def assert_summary_matches(out: Path) -> None:
    summary = json.loads((out / "summary.json").read_text())
    mine = recompute(out)
    assert {c["id"] for c in summary["cases"]} == set(mine)
    for c in summary["cases"]:
        m = mine[c["id"]]
        assert (c["n"], c["successes"], c["errors"]) == (m["n"], m["successes"], m["errors"])
        for k, v in m["hat"].items():
            assert abs(c["pass_hat_k"][str(k)] - v) < 1e-12
        for k, v in m["at"].items():
            assert abs(c["pass_at_k"][str(k)] - v) < 1e-12
    n_max = max(m["n"] for m in mine.values())
    for k in range(1, n_max + 1):
        hats = [m["hat"][k] for m in mine.values() if m["n"] >= k]
        ats = [m["at"][k] for m in mine.values() if m["n"] >= k]
        entry = summary["suite"]["pass_hat_k"][str(k)]
        assert abs(entry["estimate"] - sum(hats) / len(hats)) < 1e-12
        assert entry["ci_low"] <= entry["estimate"] <= entry["ci_high"]
        assert abs(summary["suite"]["pass_at_k"][str(k)]["estimate"] - sum(ats) / len(ats)) < 1e-12


def test_summary_matches_recomputation_and_carries_intervals(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", f"{NOTES / 'agents.py'}:good",
                                  "--trials", "4", "--out", str(out), "--by", "scenario", "-q"])
    assert r.exit_code == 0, r.output
    assert_summary_matches(out)
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
    manifest = store.read_manifest()
    a = build_summary(recs, manifest)
    b = build_summary(recs, manifest)
    assert a["suite"]["pass_hat_k"] == b["suite"]["pass_hat_k"]
    fewer = [r for r in recs if r.trial < 2]
    s = build_summary(fewer, manifest)
    assert "3" not in s["suite"]["pass_hat_k"] and s["cases"][0]["n"] == 2


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
    assert "1 case(s) pass with an agent that does nothing: free-pass" in r.output.replace("\n", " ")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sanity"] == {"checked": True, "noop_passes": ["free-pass"]}
