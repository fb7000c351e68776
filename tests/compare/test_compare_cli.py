"""passhat compare: paired deltas with intervals, new failures by id, McNemar on binary metrics, suite checks."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from passhat.stats.permutation import uniform_drop_mde


def compare_json(cli: Any, base: Path, cand: Path, *extra: Any) -> dict[str, Any]:
    out = base.parent / "compare.json"
    r = cli("compare", base, cand, "--json", out, *extra)
    assert r.exit_code == 0, r.output
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_identical_runs_differ_by_nothing(cli: Any, write_suite: Any, plan_run: Any) -> None:
    suite = write_suite({f"c{i}": "base=pppf" if i % 3 == 0 else "base=pppp" for i in range(6)})
    a = plan_run(suite, "base", 4, "a")
    b = plan_run(suite, "base", 4, "b", seed=9)
    result = compare_json(cli, a, b)
    assert result["new_failures"] == [] and result["new_passes"] == []
    assert set(result["metrics"]) == {f"pass_{f}_{k}" for f in ("hat", "at") for k in range(1, 5)}
    for m in result["metrics"].values():
        assert m["delta"] == 0 and m["ci_low"] < 0 < m["ci_high"] and m["p_value"] == 1.0
        # no case differs: the MDE is still what 6 cases can show (a uniform drop found 80 % of the time), not 0
        assert m["mde"] is not None and 0.2 < m["mde"] < 1.0
        assert m["p_interval"] == max(m["p_test"] or 0.0, m["p_pseudocase"])


def test_regression_lists_new_failures_with_a_negative_interval(cli: Any, write_suite: Any, plan_run: Any) -> None:
    plans = {f"ok{i}": "base=pppp cand=pppp" for i in range(6)}
    plans |= {f"broken{i}": "base=pppp cand=ffff" for i in range(5)}
    plans |= {"wobbly": "base=pppp cand=pppf", "fixed": "base=pfpf cand=pppp", "still-flaky": "base=pfpf cand=ffff"}
    suite = write_suite(plans)
    result = compare_json(cli, plan_run(suite, "base", 4, "base"), plan_run(suite, "cand", 4, "cand"))
    assert result["new_failures"] == sorted(["wobbly", *(f"broken{i}" for i in range(5))])
    assert result["new_passes"] == ["fixed"]
    m = result["metrics"]["pass_hat_1"]
    # per-case differences: -1 for five cases, -0.25, +0.5, -0.5, 0 for six
    d = np.array([-1.0] * 5 + [-0.25, 0.5, -0.5] + [0.0] * 6)
    assert m["delta"] == pytest.approx(d.mean())
    assert m["ci_high"] < 0 and m["method"] == "t_pseudocase" and m["test"] == "paired_t" and m["p_value"] < 0.05
    t = stats.ttest_rel(np.zeros(14), -d)  # the t part of the interval is the paired t-test's own interval
    t_low, t_high = t.confidence_interval(0.95)
    assert m["ci_low"] <= t_low and t_high <= m["ci_high"]
    assert m["p_test"] == pytest.approx(t.pvalue) and m["p_interval"] == max(m["p_test"], m["p_pseudocase"])
    assert m["se"] == pytest.approx(d.std(ddof=1) / math.sqrt(14))
    assert m["cases"] == 14 and m["base"] == pytest.approx(13 / 14)
    counts = {"base": [4] * 11 + [4, 2, 2], "cand": [4] * 6 + [0] * 5 + [3, 4, 0]}
    assert m["mde"] == pytest.approx(uniform_drop_mde([4] * 14, counts["base"], [4] * 14, counts["cand"], "pass_hat_k", 1))
    # pass^4 per case: broken and wobbly 1 → 0, fixed 0 → 1, still-flaky 0 → 0; with 4 trials in both runs
    # each case fully passes or not, so this is a paired 2×2 table: Tango's interval, McNemar's test.
    m4 = result["metrics"]["pass_hat_4"]
    assert m4["delta"] == pytest.approx(-5 / 14)
    assert (m4["method"], m4["test"], m4["discordant"]) == ("tango_pseudocase", "mcnemar",
                                                             {"base_only": 6, "candidate_only": 1})
    assert m4["p_test"] == pytest.approx(2 * stats.norm.sf(5 / math.sqrt(7)))
    assert result["metrics"]["pass_hat_3"]["method"] == "t_pseudocase"  # pass^3 of 4 trials: 0, 1/4, 1
    r = cli("compare", base := suite.parent / "base", suite.parent / "cand")
    assert r.exit_code == 0 and base.exists()
    assert r.output.index("NEW FAILURE") < r.output.index("paired differences")


def test_one_trial_per_case_uses_mcnemar_mid_p(cli: Any, write_suite: Any, plan_run: Any) -> None:
    # 3 cases only the base passes, 12 only the candidate passes, 2 both pass (statistics.md §4: b=3, c=12)
    plans = {f"b{i:02d}": "base=p cand=f" for i in range(3)} | {f"c{i:02d}": "base=f cand=p" for i in range(12)}
    plans |= {"both0": "base=p cand=p", "both1": "base=p cand=p"}
    suite = write_suite(plans)
    result = compare_json(cli, plan_run(suite, "base", 1, "base"), plan_run(suite, "cand", 1, "cand"))
    m = result["metrics"]["pass_hat_1"]
    assert m["test"] == "mcnemar" and m["discordant"] == {"base_only": 3, "candidate_only": 12}
    # McNemar's score test (c − b)/√(b + c) = 9/√15, the test Tango's interval inverts.
    assert m["p_test"] == pytest.approx(2 * stats.norm.sf(9 / math.sqrt(15)), abs=1e-12)
    assert m["method"] == "tango_pseudocase" and m["ci_low"] > 0 and m["p_value"] < 0.05
    # Mid-p beside it, X ~ Bin(15, 1/2): 2·[P(X ≤ 3) − ½·P(X = 3)] = 2·(1 + 15 + 105 + 455 − 455/2)/2^15
    assert m["p_midp"] == pytest.approx(697 / 32768, abs=1e-12)
    assert m["delta"] == pytest.approx(9 / 17)
    assert set(result["metrics"]) == {"pass_hat_1", "pass_at_1"}


def test_different_suites_are_refused_unless_changed_cases_are_excluded(
    cli: Any, write_suite: Any, plan_run: Any
) -> None:
    plans = {f"c{i}": "base=pp cand=pp" for i in range(4)}
    old = write_suite(plans, "old")
    new = write_suite(plans | {"extra": "cand=pp"}, "new")
    (new / "c2.yaml").write_text((new / "c2.yaml").read_text().replace("priority 2.", "priority 2, please."))
    base, cand = plan_run(old, "base", 2, "base"), plan_run(new, "cand", 2, "cand")
    r = cli("compare", base, cand)
    [said] = r.output.splitlines()
    assert r.exit_code == 2 and said.startswith("error: ")
    assert "ran different suites" in said and "--allow-changed-cases" in said
    assert "1 case(s) changed: c2" in said and "1 case(s) added: extra" in said  # named, not just counted
    result = compare_json(cli, base, cand, "--allow-changed-cases")
    assert result["same_suite"] is False
    assert result["cases"]["excluded"] == [{"id": "c2", "reason": "case content changed"},
                                           {"id": "extra", "reason": "only in the candidate run"}]
    assert result["cases"]["compared"] == 3 and result["metrics"]["pass_hat_1"]["cases"] == 3


def test_a_folder_that_is_not_a_run_is_bad_input(cli: Any, tmp_path: Path, write_suite: Any, plan_run: Any) -> None:
    run = plan_run(write_suite({"c0": ""}), "base", 1, "run")
    (tmp_path / "empty").mkdir()
    r = cli("compare", run, tmp_path / "empty")
    [line] = r.output.splitlines()
    assert r.exit_code == 2 and line.startswith(f"error: {tmp_path / 'empty'}") and "not a run folder" in line


@pytest.mark.parametrize("lost", ["emptied", "removed"])
def test_a_run_without_recorded_trials_is_bad_input_for_compare_and_gate(cli: Any, tmp_path: Path, write_suite: Any,
                                                                        plan_run: Any, lost: str) -> None:
    # with its trials.jsonl emptied or left out of an artifact, the base said "no significant new failures"
    # and a gate of no_new_failures against it PASSed (exit 0)
    suite = write_suite({f"c{i}": "base=pppp cand=pppf" for i in range(4)})
    base, cand = plan_run(suite, "base", 4, "base"), plan_run(suite, "cand", 4, "cand")
    trials = base / "trials.jsonl"
    trials.write_text("") if lost == "emptied" else trials.unlink()
    said = "holds no trial record" if lost == "emptied" else "is missing"
    gate = tmp_path / "gate.yaml"
    gate.write_text("rules:\n  - no_new_failures:\n")
    for args, role in [(("compare", base, cand), "base"), (("compare", cand, base), "candidate"),
                       (("gate", cand, "--gate", gate, "--baseline", base), "--baseline")]:
        r = cli(*args)
        [line] = r.output.splitlines()
        assert r.exit_code == 2, r.output
        assert line == f"error: {trials}: {said}; the {role} run has no recorded trial to compare with"


def test_strata_are_holm_corrected_within_each_metric(cli: Any, write_suite: Any, plan_run: Any) -> None:
    plans = {f"f{i}": "base=pppp cand=pfff" if i < 4 else "base=pppp cand=pppp" for i in range(6)}
    plans |= {f"n{i}": "base=pppp cand=pppf" if i < 2 else "base=pppp cand=pppp" for i in range(6)}
    tags = {cid: {"scenario": "fault" if cid.startswith("f") else "normal"} for cid in plans}
    suite = write_suite(plans, tags=tags)
    result = compare_json(cli, plan_run(suite, "base", 4, "base"), plan_run(suite, "cand", 4, "cand"),
                          "--by", "scenario")
    fault, normal = result["strata"]["scenario"]["fault"], result["strata"]["scenario"]["normal"]
    assert fault["cases"] == normal["cases"] == 6
    for name in ("pass_hat_1", "pass_hat_4"):
        lo, hi = sorted([fault[name]["p_value"], normal[name]["p_value"]])
        adjusted = sorted([fault[name]["p_holm"], normal[name]["p_holm"]])
        assert adjusted == pytest.approx([min(1, 2 * lo), min(1, max(2 * lo, hi))])
    assert fault["pass_hat_1"]["delta"] == pytest.approx(-4 * 0.75 / 6)


def test_groups_are_paired_as_units(cli: Any, write_suite: Any, plan_run: Any) -> None:
    plans = {f"c{i}": "base=pp cand=pf" if i % 2 else "base=pp cand=pp" for i in range(8)}
    suite = write_suite(plans, groups={"c0": "fam", "c1": "fam", "c2": "fam"})
    m = compare_json(cli, plan_run(suite, "base", 2, "base"), plan_run(suite, "cand", 2, "cand"))["metrics"]["pass_hat_1"]
    assert m["test"] == "paired_t_clustered" and (m["cases"], m["units"]) == (8, 6)


def test_a_changed_domain_excludes_the_cases_that_run_on_it(cli: Any, write_suite: Any, plan_run: Any) -> None:
    suite = write_suite({"a": "", "b": ""})
    base, cand = plan_run(suite, "base", 1, "base"), plan_run(suite, "base", 1, "cand")

    def edit(folder: Path, domains: dict[str, str], case_domains: dict[str, str] | None) -> None:
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["suite"]["hash"] = f"edited-{folder.name}"
        manifest["suite"]["domains"] = domains
        for cid, meta in manifest["suite"]["case_meta"].items():
            meta.pop("domain", None)
            if case_domains:
                meta["domain"] = case_domains[cid]
        (folder / "manifest.json").write_text(json.dumps(manifest))

    # manifests that do not say which domain a case uses: any domain change excludes every case
    edit(base, {"notes": "v1"}, None)
    edit(cand, {"notes": "v2"}, None)
    r = cli("compare", base, cand, "--allow-changed-cases")
    [line] = r.output.splitlines()
    assert r.exit_code == 2 and line.startswith("error: ") and "nothing to compare" in line
    # with the case → domain mapping, only the cases on the changed domain are excluded
    edit(base, {"notes": "v1", "other": "w1"}, {"a": "notes", "b": "other"})
    edit(cand, {"notes": "v2", "other": "w1"}, {"a": "notes", "b": "other"})
    result = compare_json(cli, base, cand, "--allow-changed-cases")
    assert result["cases"]["excluded"] == [{"id": "a", "reason": "domain 'notes' changed"}]


def test_the_terminal_separates_significant_new_failures_from_chance(cli: Any, write_suite: Any, plan_run: Any) -> None:
    """One failed trial after 4/4 is what an unchanged agent does all the time: not shown as a NEW FAILURE."""
    suite = write_suite({"steady": "base=pppp cand=pppp", "wobbly": "base=pppp cand=pppf"})
    r = cli("compare", plan_run(suite, "base", 4, "base"), plan_run(suite, "cand", 4, "cand"))
    said = " ".join(r.output.split())  # table titles wrap at the terminal's width (80 under a test runner)
    assert r.exit_code == 0 and "NEW FAILURE" not in said and "no significant new failures" in said
    assert "1 case(s) that passed every base trial failed a candidate trial — within what chance gives" in said
