"""Metrics compared case by case: mean difference with its paired interval, the test of "nothing changed", MDE.

The unit is the case (statistics.md §4): per case d_t = θ̂_cand,t − θ̂_base,t for pass^k or pass@k. Two
questions get two answers:

- **By how much, for cases like these?** ``stats.paired_differences`` on every metric at once: the
  t-interval on the differences (cluster-robust, U − 1 degrees of freedom, when cases share a group) or,
  where every per-case value is 0 or 1 by construction (k equals the trials in both runs), Tango's score
  interval, each united with the pseudo-case interval (``method``; its own test is ``test``/``p_test``,
  and ``p_interval`` is the union inverted: < 1 − confidence exactly when the interval excludes 0).
  ``docs/design/004-paired-intervals.md`` and ``006`` have the simulations behind it.
- **Did the candidate behave differently on these cases?** ``p_value``: the within-case permutation test
  (``stats.permutation``), exact under "nothing changed" at any size, with the mean difference as its
  statistic. A uniform drop at 20 cases can be significant while the interval still holds 0: the change
  is real on these cases, its size for new ones is not yet pinned down (design note 026).

The minimum detectable effect is the mean change, spread as a uniform drop of every case's pass rate,
that ``p_value``'s test detects with 80 % power at two-sided α = 0.05 (``stats.permutation.uniform_drop_mde``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from passhat.compare.runs import LoadedRun
from passhat.metric_names import METRICS, PassMetric, metric_key
from passhat.models import PairedMetric
from passhat.models.comparison import Discordant
from passhat.stats import PairedInterval, PairedResult, detectable_change, paired_differences
from passhat.stats.passk import pass_at_k, pass_hat_k
from passhat.stats.permutation import permutation_test, uniform_drop_mde

ESTIMATORS: dict[str, Callable[[int, int, int], float]] = {"pass_hat_k": pass_hat_k, "pass_at_k": pass_at_k}
MDE_ALPHA, MDE_POWER = 0.05, 0.8
"""The minimum detectable effect is reported for a two-sided test at α = 0.05 with 80 % power."""


def common_max_k(base: LoadedRun, cand: LoadedRun, case_ids: Sequence[str]) -> int:
    """The largest k that at least one case supports in both runs (0 when no case has a graded trial)."""
    return max((min(base.tallies[c].n, cand.tallies[c].n) for c in case_ids), default=0)


def compare_metric(
    base: LoadedRun, cand: LoadedRun, case_ids: Sequence[str], family: PassMetric, k: int, *,
    seed: int, confidence: float, interval: PairedInterval = "t",
) -> PairedMetric | None:
    """The comparison of one metric on the cases with at least k graded trials in both runs (None if none)."""
    (entry,) = compare_columns(base, cand, case_ids, [(family, k)], seed=seed, confidence=confidence,
                               interval=interval)
    return entry


def compare_metrics(
    base: LoadedRun, cand: LoadedRun, case_ids: Sequence[str], ks: Sequence[int], *, seed: int, confidence: float,
    interval: PairedInterval = "t",
) -> dict[str, PairedMetric]:
    """pass_hat_k and pass_at_k for each k (pass_at_1 equals pass_hat_1 and is kept for completeness)."""
    columns = [(family, k) for family in METRICS for k in ks]
    entries = compare_columns(base, cand, case_ids, columns, seed=seed, confidence=confidence, interval=interval)
    return {metric_key(f, k): e for (f, k), e in zip(columns, entries, strict=True) if e is not None}


def compare_columns(
    base: LoadedRun, cand: LoadedRun, case_ids: Sequence[str], columns: Sequence[tuple[PassMetric, int]], *,
    seed: int, confidence: float, interval: PairedInterval = "t",
) -> list[PairedMetric | None]:
    """One entry per (family, k), all from one ``paired_differences`` call (None for a metric no case supports)."""
    n_base = np.array([base.tallies[c].n for c in case_ids], dtype=int)
    n_cand = np.array([cand.tallies[c].n for c in case_ids], dtype=int)
    c_base = np.array([base.tallies[c].passes for c in case_ids], dtype=int)
    c_cand = np.array([cand.tallies[c].passes for c in case_ids], dtype=int)
    raw_groups = [cand.meta(c).group for c in case_ids]
    groups = raw_groups if any(g is not None for g in raw_groups) else None
    usable = [j for j, (_, k) in enumerate(columns) if np.any((n_base >= k) & (n_cand >= k))]
    entries: list[PairedMetric | None] = [None] * len(columns)
    if not usable:
        return entries
    base_m, cand_m = (np.full((len(case_ids), len(usable)), np.nan) for _ in range(2))
    binary = []
    for col, j in enumerate(usable):
        family, k = columns[j]
        included = (n_base >= k) & (n_cand >= k)
        for matrix, n, c in ((base_m, n_base, c_base), (cand_m, n_cand, c_cand)):
            # One exact value per (n, c): a run of 16 trials has 17 possible per-case estimates.
            for trials in np.unique(n[included]):
                rows = included & (n == trials)
                table = np.array([ESTIMATORS[family](int(trials), x, k) for x in range(int(trials) + 1)])
                matrix[rows, col] = table[c[rows]]
        # Per-case values are 0 or 1 by construction only when k equals the trials in both runs.
        binary.append(bool(np.all(n_base[included] == k) and np.all(n_cand[included] == k)))
    results = paired_differences(base_m, cand_m, groups, confidence=confidence, binary=binary, interval=interval,
                                 seed=seed)
    wanted = [columns[j] for j in usable]
    change = permutation_test(n_base, c_base, n_cand, c_cand, wanted, rng=np.random.default_rng(seed))
    for col, j in enumerate(usable):
        included = ~np.isnan(base_m[:, col])
        entries[j] = _entry(results[col], base_m[included, col], cand_m[included, col], confidence,
                            [c for c, keep in zip(case_ids, included, strict=True) if not keep],
                            p_value=float(change.p_value[col]),
                            mde=uniform_drop_mde(n_base, c_base, n_cand, c_cand, *wanted[col], alpha=MDE_ALPHA,
                                                 power=MDE_POWER))
    return entries


def _entry(r: PairedResult, base_v: np.ndarray, cand_v: np.ndarray, confidence: float,
           excluded: list[str], p_value: float, mde: float | None) -> PairedMetric:
    """The file's entry of one metric: ``p_value`` is the permutation test's ("nothing changed on these
    cases"), ``p_interval`` the interval's inverted p, ``mde`` the uniform drop found with 80 % power."""
    binary: dict[str, Any] = {} if r.discordant is None else {  # set only for 0/1 metrics, as the file holds them
        "discordant": Discordant(base_only=r.discordant[0], candidate_only=r.discordant[1]), "p_midp": r.p_midp}
    return PairedMetric(
        delta=r.delta, ci_low=r.low, ci_high=r.high, p_value=p_value, p_interval=r.p_value, test=r.test,
        p_test=r.p_test, p_pseudocase=r.p_pseudocase, method=r.method, confidence=confidence,
        base=float(np.mean(base_v)), candidate=float(np.mean(cand_v)), correlation=r.correlation, sd_diff=r.sd_diff,
        se=r.se, cases=r.n_cases, units=r.n_units, excluded=excluded, mde=mde, **binary)


def paired_mde(se: float | None, units: int, *, alpha: float = MDE_ALPHA, power: float = MDE_POWER,
               two_sided: bool = True) -> float | None:
    """The smallest change detected with 80 % power whatever its shape (``stats.detectable_change``).

    Two-sided α = 0.05 for ``passhat compare``; a gate's non-inferiority decision asks for its one-sided α.
    σ₀ = SE·√U is the spread of the per-unit differences (0 when nothing differs: the MDE is then the
    resolution of "0 of U units changed", not zero). None with fewer than two units, or when no change
    within [−1, 1] is detectable at this size.
    """
    if units < 2:
        return None
    return detectable_change((se or 0.0) * math.sqrt(units), units, alpha=alpha, power=power, two_sided=two_sided)
