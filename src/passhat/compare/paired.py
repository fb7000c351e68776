"""One metric compared case by case: mean difference, paired interval, test, correlation and MDE.

The unit is the case (statistics.md §4): per case d_t = θ̂_cand,t − θ̂_base,t for pass^k or pass@k,
then ``stats.paired_difference`` (BCa over cases, groups resampled whole; paired t-test, clustered
when cases share a group). With one trial per case in both runs the per-case values are 0/1 and the
test is McNemar's mid-p on the discordant cases (Fagerland et al. 2013), which is exact where the
t-test is not. The minimum detectable effect uses the paired SD of the per-unit mean differences, so
a family of cases counts once, as in the interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from passhat.compare.runs import LoadedRun
from passhat.stats import mcnemar_midp, minimum_detectable_effect, paired_difference
from passhat.stats.passk import pass_at_k, pass_hat_k

Family = Literal["pass_hat_k", "pass_at_k"]
ESTIMATORS: dict[str, Callable[[int, int, int], float]] = {"pass_hat_k": pass_hat_k, "pass_at_k": pass_at_k}
MDE_ALPHA, MDE_POWER = 0.05, 0.8
"""The minimum detectable effect is reported for a two-sided test at α = 0.05 with 80 % power."""


def metric_name(family: str, k: int) -> str:
    """``pass_hat_k`` with k = 4 → ``pass_hat_4``: the key used in compare JSON and gate reports."""
    return f"{family.removesuffix('_k')}_{k}"


def common_max_k(base: LoadedRun, cand: LoadedRun, case_ids: Sequence[str]) -> int:
    """The largest k that at least one case supports in both runs (0 when no case has a graded trial)."""
    return max((min(base.tallies[c].n, cand.tallies[c].n) for c in case_ids), default=0)


def compare_metric(
    base: LoadedRun, cand: LoadedRun, case_ids: Sequence[str], family: str, k: int, *,
    seed: int, confidence: float,
) -> dict[str, Any] | None:
    """The comparison of one metric on the cases with at least k graded trials in both runs (None if none)."""
    estimator = ESTIMATORS[family]
    included = [c for c in case_ids if base.tallies[c].n >= k and cand.tallies[c].n >= k]
    if not included:
        return None
    kept = set(included)
    base_v = [estimator(base.tallies[c].n, base.tallies[c].passes, k) for c in included]
    cand_v = [estimator(cand.tallies[c].n, cand.tallies[c].passes, k) for c in included]
    raw_groups = [cand.meta(c).get("group") for c in included]
    groups = raw_groups if any(g is not None for g in raw_groups) else None
    r = paired_difference(base_v, cand_v, groups, seed=seed, confidence=confidence)
    entry: dict[str, Any] = {
        "delta": r.delta, "ci_low": r.low, "ci_high": r.high, "p_value": r.p_value,
        "test": "paired_t_clustered" if groups else "paired_t", "method": r.method, "confidence": confidence,
        "base": float(np.mean(base_v)), "candidate": float(np.mean(cand_v)), "correlation": r.correlation,
        "sd_diff": r.sd_diff, "cases": r.n_cases, "units": r.n_units,
        "excluded": [c for c in case_ids if c not in kept],
    }
    one_trial = all(base.tallies[c].n == 1 and cand.tallies[c].n == 1 for c in included)
    if k == 1 and one_trial:
        base_only = sum(1 for x, y in zip(base_v, cand_v, strict=True) if x == 1 and y == 0)
        cand_only = sum(1 for x, y in zip(base_v, cand_v, strict=True) if x == 0 and y == 1)
        entry.update(p_value=mcnemar_midp(base_only, cand_only), test="mcnemar_midp",
                     discordant={"base_only": base_only, "candidate_only": cand_only})
    entry["mde"] = paired_mde(np.asarray(cand_v) - np.asarray(base_v), raw_groups, included)
    return entry


def paired_mde(d: np.ndarray, groups: Sequence[str | None], case_ids: Sequence[str]) -> float | None:
    """MDE from the SD of per-unit mean differences; None when it cannot be estimated.

    With no difference anywhere the SD is 0 and the formula would claim any effect is detectable; that
    is not evidence of power, so the MDE is None and the interval (a rule-of-three bound) is the
    honest resolution of the comparison.
    """
    keys = [f"g:{g}" if g is not None else f"c:{c}" for g, c in zip(groups, case_ids, strict=True)]
    _, unit = np.unique(keys, return_inverse=True)
    means = np.bincount(unit, weights=d) / np.bincount(unit)
    if means.size < 2:
        return None
    sd = float(np.std(means, ddof=1))
    if sd < 1e-12:  # rounding residue of identical unit means, not spread
        return None
    return minimum_detectable_effect(sd, int(means.size), alpha=MDE_ALPHA, power=MDE_POWER)


def compare_metrics(
    base: LoadedRun, cand: LoadedRun, case_ids: Sequence[str], ks: Sequence[int], *, seed: int, confidence: float,
) -> dict[str, dict[str, Any]]:
    """pass_hat_k and pass_at_k for each k (pass_at_1 equals pass_hat_1 and is kept for completeness)."""
    out: dict[str, dict[str, Any]] = {}
    for family in ("pass_hat_k", "pass_at_k"):
        for k in ks:
            entry = compare_metric(base, cand, case_ids, family, k, seed=seed, confidence=confidence)
            if entry is not None:
                out[metric_name(family, k)] = entry
    return out
