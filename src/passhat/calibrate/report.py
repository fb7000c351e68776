"""The calibration report: how far the judge can be trusted, as a JSON document a gate can read.

Agreement is computed on the items both a person and the judge labelled (the judge's first repeat).
A judge answer that could not decide counts as the fail it produced in the trial (the grade is what
gets calibrated), and the number of such items is reported. Kappa and AC1 are reported together with
the prevalence because under skewed prevalence κ collapses while agreement stays high (§6). The
Rogan–Gladen correction turns the judge's raw pass rate on every judged item into an estimate of the
rate people would have given, using the sensitivity and specificity measured here.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from passhat.calibrate.agreement import (
    Confusion,
    cohen_kappa,
    consistency,
    gwet_ac1,
    rogan_gladen,
)
from passhat.calibrate.inputs import Judgment, Key
from passhat.stats import wilson

FORMAT = "passhat.calibration/1"


@dataclass(frozen=True)
class Thresholds:
    """Minimums a calibration must meet (``None``: not required). A metric that cannot be computed
    (no items, undefined) fails its threshold."""

    min_items: int | None = None
    min_agreement: float | None = None
    min_kappa: float | None = None
    min_ac1: float | None = None
    min_sensitivity: float | None = None
    min_specificity: float | None = None
    min_swap_consistency: float | None = None
    min_test_retest: float | None = None


def _proportion(successes: int, n: int, confidence: float) -> dict[str, Any]:
    if n == 0:
        return {"estimate": None, "ci_low": None, "ci_high": None, "successes": 0, "n": 0}
    low, high = wilson(successes, n, confidence)
    return {"estimate": successes / n, "ci_low": low, "ci_high": high, "successes": successes, "n": n}


def _first_repeats(judgments: list[Judgment]) -> dict[Key, Judgment]:
    first: dict[Key, Judgment] = {}
    for j in sorted(judgments, key=lambda j: j.repeat):
        first.setdefault(j.key, j)
    return first


def _swap(pairwise: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    if pairwise is None:
        return None
    valid = [p for p in pairwise if "invalid" not in (p["first_order"], p["second_order"])]
    same = sum(p["first_order"] == p["second_order"] for p in valid)
    return {"estimate": same / len(valid) if valid else None, "pairs": len(pairwise), "valid": len(valid),
            "ties_from_disagreement": len(valid) - same}


def check_thresholds(report: dict[str, Any], thresholds: Thresholds) -> list[str]:
    """What the report fails, in words (empty: it meets every threshold)."""
    values = {
        "min_items": report["items"],
        "min_agreement": report["percent_agreement"]["estimate"],
        "min_kappa": report["cohen_kappa"],
        "min_ac1": report["gwet_ac1"],
        "min_sensitivity": report["sensitivity"]["estimate"],
        "min_specificity": report["specificity"]["estimate"],
        "min_swap_consistency": (report["swap_consistency"] or {}).get("estimate"),
        "min_test_retest": report["test_retest"]["estimate"],
    }
    failures = []
    for name, minimum in asdict(thresholds).items():
        if minimum is None:
            continue
        value = values[name]
        if value is None:
            failures.append(f"{name.removeprefix('min_')}: cannot be computed from this sample (required ≥ {minimum})")
        elif value < minimum:
            failures.append(f"{name.removeprefix('min_')}: {value:.3f} < required {minimum}")
    return failures


def calibration_report(
    labels: dict[Key, bool],
    judgments: list[Judgment],
    pairwise: list[dict[str, Any]] | None = None,
    *,
    thresholds: Thresholds | None = None,
    confidence: float = 0.95,
    judge: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report as a JSON-ready dict (format ``passhat.calibration/1``, documented in docs/llm.md)."""
    first = _first_repeats(judgments)
    matched = [k for k in labels if k in first]
    human = [labels[k] for k in matched]
    verdicts = [first[k].passed for k in matched]
    c = Confusion.of(human, verdicts)
    human_fail = c.n - c.human_pass

    groups: dict[Key, list[bool]] = defaultdict(list)
    for j in judgments:
        groups[j.key].append(j.passed)
    retest, retest_items = consistency(list(groups.values()))

    sens = _proportion(c.both_pass, c.human_pass, confidence)
    spec = _proportion(c.both_fail, human_fail, confidence)
    criteria = {k[2] for k in labels}
    judged = [j for k, j in first.items() if k[2] in criteria]
    observed = sum(j.passed for j in judged) / len(judged) if judged else None
    corrected = None
    if observed is not None and sens["estimate"] is not None and spec["estimate"] is not None:
        corrected = rogan_gladen(observed, sens["estimate"], spec["estimate"])

    report: dict[str, Any] = {
        "format": FORMAT,
        "judge": judge or {},
        "items": c.n,
        "labels": len(labels),
        "unmatched_labels": sorted([list(k) for k in labels if k not in first], key=str)[:50],
        "judge_undecided": sum(not first[k].decided for k in matched),
        "confusion": {"both_pass": c.both_pass, "judge_pass_human_fail": c.judge_pass_human_fail,
                      "judge_fail_human_pass": c.judge_fail_human_pass, "both_fail": c.both_fail},
        "prevalence": {"human_pass_rate": c.human_pass / c.n if c.n else None,
                       "judge_pass_rate": c.judge_pass / c.n if c.n else None},
        "percent_agreement": _proportion(c.agreements, c.n, confidence),
        "cohen_kappa": cohen_kappa(c),
        "gwet_ac1": gwet_ac1(c),
        "sensitivity": sens,
        "specificity": spec,
        "swap_consistency": _swap(pairwise),
        "test_retest": {"estimate": retest, "items": retest_items},
        "pass_rate": {"judged_items": len(judged), "judge_raw": observed, "rogan_gladen": corrected,
                      "human_sample": c.human_pass / c.n if c.n else None},
        "confidence": confidence,
    }
    failures = check_thresholds(report, thresholds or Thresholds())
    report["thresholds"] = {k: v for k, v in asdict(thresholds or Thresholds()).items() if v is not None}
    report["passed"] = not failures
    report["failures"] = failures
    return report
