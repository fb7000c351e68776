"""Comparing two versions on the same cases: paired differences with an interval and a test that agree.

Pairing removes the between-task variance both versions share (Miller 2024, recommendation 4): per case
d_t = cand_t − base_t (statistics.md §4), and the inference is on mean(d) with the case — or the group
of cases, counted as one unit — as the unit. The interval and the p-value always come
from one method, so "the interval excludes 0" and "p < 1 − confidence" never disagree.

Methods (``docs/design/004-paired-intervals.md`` and ``006-ceiling-and-families.md`` have the simulations):

- ``"t_pseudocase"`` (the default): mean(d) ± t_{U−1}·SE, with SE the cluster-robust standard error over
  the U units (Miller's clustered SE with the U/(U − 1) factor; sd/√T without groups); its test is the
  same statistic: ``paired_t`` (equal to ``scipy.stats.ttest_rel``) or ``paired_t_clustered``.
- ``"tango_pseudocase"``: columns flagged ``binary`` — every per-case value is structurally 0 or 1 (k
  equals the trials in both runs: pass^1 with one trial, pass^n with n) — when no group holds several
  cases. The data are then a paired 2×2 table; Tango's (1998, Stat Med 17:891) score interval,
  recommended by Fagerland, Lydersen & Laake (2014, Stat Med 33:2850), with McNemar's asymptotic test
  (``mcnemar``), which it inverts at 0. The mid-p McNemar (Fagerland et al. 2013) is reported beside it
  as ``p_midp``.
- ``"bca_pseudocase"`` (only with ``interval="bca"``): the paired BCa bootstrap over units (Koehn 2004;
  Dror et al. 2018), all columns on the same resamples; its test (``bootstrap_bca``) is the interval
  inverted. Kept for sensitivity checks.

Each is united with the pseudo-case interval (``stats.pseudocase``) for x = (d + 1)/2 with the paired
pseudo-case (a quarter on each cell of the 2×2 table), and clipped to [−1, 1], where the mean
difference lies. The t-interval alone claimed Δ ∈ [−0.011, 0.003] when one of 30 cases dropped from
8/8 to 7/8, narrower than when nothing differed at all; the union is never narrower there, covered ≥ 0.94
in all 126 settings of design 004 (t alone: 0.895 at worst) and halved the worst share of false
non-inferiority passes (0.142 → 0.08). ``p_value`` is the union inverted — the larger of ``p_test`` and
``p_pseudocase`` — so the interval excludes 0 exactly when p < 1 − confidence. With no spread at all
(every difference equal, or one unit) there is no variance to estimate, and the pseudo-case interval is
reported alone (``"pseudocase"``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from passhat.stats._resample import bca_fit, cluster_se, resampling_units, unit_totals
from passhat.stats._special import ndtr, ndtri
from passhat.stats.bootstrap import IntervalMethod
from passhat.stats.pseudocase import PAIRED, pseudocase_interval, pseudocase_p_value

_SE_TOL = 1e-12
"""Below this a cluster SE is rounding residue of identical unit means, not spread."""

PairedInterval = Literal["t", "bca"]
"""Interval family requested from ``paired_differences``; binary columns use Tango's score either way."""

PairedTest = Literal["paired_t", "paired_t_clustered", "mcnemar", "bootstrap_bca", "pseudocase"]
"""The test behind ``PairedResult.p_test``; ``p_value`` inverts the reported (union) interval."""


@dataclass(frozen=True)
class PairedResult:
    """Candidate minus baseline on the same cases: the mean difference, its interval and its test."""

    delta: float
    """Mean of cand − base over cases (positive: the candidate scores higher)."""
    low: float
    """Lower bound of the two-sided interval for the mean difference."""
    high: float
    """Upper bound of the two-sided interval for the mean difference."""
    method: IntervalMethod
    """``"t_pseudocase"``, ``"tango_pseudocase"``, ``"bca_pseudocase"`` (the union), or ``"pseudocase"`` alone."""
    confidence: float
    """Two-sided confidence level of [low, high]."""
    p_value: float
    """Two-sided p-value of mean difference 0 for the reported interval: the larger of ``p_test`` and
    ``p_pseudocase``, so p < 1 − confidence exactly when [low, high] excludes 0."""
    test: PairedTest
    """The method's own test, whose p-value is ``p_test`` (``pseudocase`` when there is no spread to test)."""
    se: float | None
    """Cluster-robust standard error of ``delta`` (sd/√T without groups); None with fewer than 2 units."""
    correlation: float | None
    """Pearson correlation of base and cand across cases; None if fewer than 2 cases or one is constant."""
    sd_diff: float | None
    """Sample SD (ddof = 1) of per-case differences."""
    n_cases: int
    """Number of paired cases."""
    n_units: int
    """Independent units (groups plus ungrouped cases)."""
    discordant: tuple[int, int] | None = None
    """Binary columns: (base only passes, candidate only passes), the off-diagonal of the paired 2×2 table."""
    p_midp: float | None = None
    """Binary columns: the mid-p McNemar test (Fagerland et al. 2013), reported beside ``p_value``."""
    p_test: float | None = None
    """The p-value of ``test`` alone (``scipy.stats.ttest_rel`` for ``paired_t``); None without spread."""
    p_pseudocase: float | None = None
    """The p-value of the pseudo-case interval alone (its equal-tailed interval inverted at 0)."""


def paired_difference(
    base: Sequence[float],
    cand: Sequence[float],
    groups: Sequence[str | None] | None = None,
    *,
    seed: int = 0,
    confidence: float = 0.95,
    binary: bool = False,
    interval: PairedInterval = "t",
    n_resamples: int = 2000,
) -> PairedResult:
    """Mean difference cand − base for one metric; ``paired_differences`` with a single column.

    Without groups the p-value is ``scipy.stats.ttest_rel(cand, base)``; with groups it is the same t
    statistic with the cluster-robust SE and U − 1 degrees of freedom (statistics.md §2: cluster on the
    unit of randomisation), and the interval is built on the same SE and degrees of freedom.
    """
    a, b = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"base and cand must be non-empty and of equal length, got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("base and cand must be finite; drop cases missing in either version first")
    (result,) = paired_differences(
        a.reshape(-1, 1), b.reshape(-1, 1), groups, seed=seed, confidence=confidence, binary=[binary],
        interval=interval, n_resamples=n_resamples,
    )
    return result


def paired_differences(
    base: np.ndarray,
    cand: np.ndarray,
    groups: Sequence[str | None] | None = None,
    *,
    confidence: float = 0.95,
    binary: Sequence[bool] | None = None,
    interval: PairedInterval = "t",
    seed: int = 0,
    n_resamples: int = 2000,
    batch: int | None = None,
) -> list[PairedResult]:
    """One ``PairedResult`` per column of two cases × columns matrices (e.g. pass^k and pass@k for every k).

    NaN in either matrix excludes that case from that column (too few trials for k in one run). The
    whole matrix is handled at once: the t, Tango and pseudo-case intervals are closed-form per column, and
    with ``interval="bca"`` every column is read off the SAME resamples of units (as ``suite_intervals``
    does), so a comparison of 10,000 cases × 32 metrics costs one bootstrap, not 32. ``binary[j]``
    declares that column j's values can only be 0 or 1 (see the module docstring); ``seed`` and
    ``n_resamples`` matter only for ``"bca"``.
    """
    a, b = _check_pair(base, cand, confidence)
    if interval not in ("t", "bca"):
        raise ValueError(f"interval must be 't' or 'bca', got {interval!r}")
    n_cols = a.shape[1]
    flags = [False] * n_cols if binary is None else [bool(x) for x in binary]
    if len(flags) != n_cols:
        raise ValueError(f"binary has {len(flags)} entries but there are {n_cols} columns")
    d = b - a  # NaN where either is missing
    units = resampling_units(groups, d.shape[0])
    sums, counts = unit_totals(d, units)
    se = cluster_se(sums, counts)
    # The pseudo-case interval for x = (d + 1)/2 ∈ [0, 1], with the paired pseudo-case.
    x_sums = (sums + counts) / 2
    j_low, j_high = (2 * v - 1 for v in pseudocase_interval(x_sums, counts, confidence, PAIRED))
    j_p = pseudocase_p_value(x_sums, counts, 0.5, PAIRED)
    fit = bca_fit(sums, counts, rng=np.random.default_rng(seed), n_resamples=n_resamples, batch=batch) \
        if interval == "bca" else None
    bca_low, bca_high = fit.bounds(confidence) if fit is not None else (np.full(n_cols, np.nan),) * 2
    bca_p = fit.inverted_p_values() if fit is not None else np.full(n_cols, np.nan)
    t_test: PairedTest = "paired_t" if groups is None or all(g is None for g in groups) else "paired_t_clustered"
    n_units_all = (counts > 0).sum(axis=0)
    out = []
    for j in range(n_cols):
        present = ~np.isnan(d[:, j])
        col, n_units = d[present, j], int(n_units_all[j])
        est = math.fsum(col) / len(col)
        if flags[j] and n_units == col.size:
            base_only, cand_only = _discordant(a[present, j], b[present, j])
            verdict = _Verdict(*tango_interval(base_only, cand_only, col.size, confidence), "tango_pseudocase",
                               mcnemar_score(base_only, cand_only), "mcnemar", (base_only, cand_only),
                               mcnemar_midp(base_only, cand_only))
        elif not (n_units >= 2 and col.min() != col.max() and se[j] > _SE_TOL):
            # No spread to estimate a variance from (nothing differs, or one unit): the pseudo-case's answer.
            verdict = _Verdict(-1.0, 1.0, "pseudocase", None, "pseudocase")
        elif fit is not None and math.isfinite(bca_low[j]) and math.isfinite(bca_high[j]):
            verdict = _Verdict(float(bca_low[j]), float(bca_high[j]), "bca_pseudocase", float(bca_p[j]),
                               "bootstrap_bca")
        else:
            from scipy.stats import t as student_t  # lazily: scipy.stats costs a second of every start-up

            half = float(student_t.ppf(0.5 + confidence / 2, n_units - 1)) * float(se[j])
            p = float(2 * student_t.sf(abs(est / float(se[j])), n_units - 1))
            verdict = _Verdict(est - half, est + half, "t_pseudocase", p, t_test)
        # The union with the pseudo-case interval, inside the parameter space [−1, 1] (the mean of
        # differences of [0, 1] values lies there, so clipping costs no coverage); its p-value is the union
        # inverted: the larger of the two.
        if verdict.method == "pseudocase":
            low, high = float(j_low[j]), float(j_high[j])
        else:
            low, high = min(verdict.low, float(j_low[j])), max(verdict.high, float(j_high[j]))
        p_value = max(verdict.p_value if verdict.p_value is not None else 0.0, float(j_p[j]))
        out.append(PairedResult(
            delta=est, low=max(-1.0, low), high=min(1.0, high), method=verdict.method, confidence=confidence,
            p_value=p_value, test=verdict.test, se=float(se[j]) if n_units >= 2 else None,
            correlation=_pearson(a[present, j], b[present, j]),
            sd_diff=float(np.std(col, ddof=1)) if col.size >= 2 else None, n_cases=int(col.size), n_units=n_units,
            discordant=verdict.discordant, p_midp=verdict.p_midp, p_test=verdict.p_value,
            p_pseudocase=float(j_p[j])))
    return out


class _Verdict(NamedTuple):
    """The method-specific part of a ``PairedResult``."""

    low: float
    high: float
    method: IntervalMethod
    p_value: float | None
    test: PairedTest
    discordant: tuple[int, int] | None = None
    p_midp: float | None = None


def _discordant(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """(base only passes, candidate only passes) of a column declared binary; refuses other values."""
    if not np.all(np.isin(a, (0.0, 1.0)) & np.isin(b, (0.0, 1.0))):
        raise ValueError("a column declared binary has per-case values other than 0 and 1")
    return int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))


def _check_pair(base: np.ndarray, cand: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    if a.ndim != 2 or a.shape != b.shape or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"base and cand must be non-empty cases × columns matrices of one shape, got {a.shape} "
                         f"and {b.shape}")
    if np.isinf(a).any() or np.isinf(b).any():
        raise ValueError("values must be finite (use NaN to exclude a case from a column)")
    empty = np.flatnonzero((np.isnan(a) | np.isnan(b)).all(axis=0))
    if empty.size:
        raise ValueError(f"column(s) {empty.tolist()} have no case with a value in both versions")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return a, b


def _pearson(a: np.ndarray, b: np.ndarray) -> float | None:
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def tango_interval(base_only: int, cand_only: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Tango's score interval for Δ = P(cand passes) − P(base passes) from a paired 2×2 table.

    ``base_only`` and ``cand_only`` are the discordant counts, ``n`` all pairs. The interval is
    {Δ : |z(Δ)| ≤ z_{1−α/2}} with z(Δ) = (c − b − nΔ)/√(n(2q̃ + Δ − Δ²)), q̃ the restricted maximum
    likelihood of P(base only) under Δ: the root of 2n·q² + W·q − bΔ(1 − Δ) = 0 with
    W = −(b + c) + (2n − c + b)Δ (Tango 1998, Stat Med 17:891). Solved by bisection to machine
    precision. Fagerland, Lydersen & Laake (2014) recommend it for paired proportions; it stays inside
    [−1, 1], and with no discordant pair it is ± z²/(n + z²), the Wilson bound for 0 of n. At Δ = 0 the
    score statistic is McNemar's (c − b)/√(b + c), so the interval excludes 0 exactly when
    ``mcnemar_score`` < 1 − confidence. Checked against PropCIs::scoreci.mp: b = 25, c = 28, n = 618 at
    90 % gives [−0.0148, 0.0247].
    """
    b, c, n = operator.index(base_only), operator.index(cand_only), operator.index(n)
    if b < 0 or c < 0 or n < 1 or b + c > n:
        raise ValueError(f"need 0 <= base_only, cand_only and base_only + cand_only <= n >= 1; got {b}, {c}, {n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    z = float(ndtri(0.5 + confidence / 2))
    estimate = (c - b) / n

    def score(delta: float) -> float:
        w = -(b + c) + (2 * n - c + b) * delta
        q = (-w + math.sqrt(max(w * w + 8 * n * b * delta * (1 - delta), 0.0))) / (4 * n)
        var = n * (2 * q + delta - delta * delta)
        num = c - b - n * delta
        if var <= 0:
            return 0.0 if num == 0 else math.copysign(math.inf, num)
        return num / math.sqrt(var)

    # score(Δ) decreases in Δ; each bound is where it crosses ±z.
    def crossing(lo: float, hi: float, target: float) -> float:
        for _ in range(200):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if score(mid) > target else (lo, mid)
        return (lo + hi) / 2

    low = -1.0 if score(-1.0) <= z else crossing(-1.0, estimate, z)
    high = 1.0 if score(1.0) >= -z else crossing(estimate, 1.0, -z)
    return low, high


def mcnemar_score(b: int, c: int) -> float:
    """McNemar's asymptotic test without continuity correction: 2·Φ(−|c − b|/√(b + c)); 1.0 when b + c = 0.

    The score test of Tango's interval at Δ = 0 (so the two agree), and the chi-square McNemar test
    (b − c)²/(b + c) of ``statsmodels ... mcnemar(exact=False, correction=False)``. Fagerland et al.
    (2013) found it close to nominal where small excesses are tolerable; for b = 3, c = 12 it gives
    0.0201 (mid-p 0.0213, exact 0.0352).
    """
    b, c = operator.index(b), operator.index(c)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    return float(2 * ndtr(-abs(c - b) / math.sqrt(b + c)))


def mcnemar_midp(b: int, c: int) -> float:
    """Mid-p McNemar test for one trial per case: b = base passes/cand fails, c = base fails/cand passes.

    p = 2·[P(X ≤ min(b, c)) − ½·P(X = min(b, c))], X ~ Bin(b + c, ½), capped at 1. Fagerland, Lydersen
    & Laake (2013, BMC Med Res Methodol 13:91) recommend it over the exact conditional test, which is
    conservative (statistics.md §4): b = 3, c = 12 gives 0.0213 (exact: 0.0352). No discordant pairs
    (b + c == 0) is no evidence of a difference: 1.0.
    """
    b, c = operator.index(b), operator.index(c)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    from scipy.stats import binom  # lazily: scipy.stats costs a second of every start-up

    low = min(b, c)
    p = 2 * (binom.cdf(low, b + c, 0.5) - 0.5 * binom.pmf(low, b + c, 0.5))
    return float(min(1.0, p))


def minimum_detectable_effect(
    sd_diff: float, n: int, alpha: float = 0.05, power: float = 0.8, two_sided: bool = True
) -> float:
    """Smallest true mean difference detected with the given power: (z_{1−α/2} + z_{1−β})·σ_d/√n.

    Source: Miller 2024 §5, statistics.md §2 (σ_d = 0.25, n = 100 → 0.070). Report it with every
    "no change" result. ``two_sided=False`` uses z_{1−α}, matching a one-sided gate. With a
    standard error in hand (clustered), σ_d/√n is that SE: pass ``sd_diff = se·√n``.
    """
    n = operator.index(n)
    if n < 1 or sd_diff < 0 or not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(
            f"need n >= 1, sd_diff >= 0, alpha and power in (0, 1); got {n}, {sd_diff}, {alpha}, {power}"
        )
    z_alpha = float(ndtri(1 - alpha / 2 if two_sided else 1 - alpha))
    return (z_alpha + float(ndtri(power))) * sd_diff / math.sqrt(n)


def detectable_change(
    sd_diff: float, units: int, alpha: float = 0.05, power: float = 0.8, two_sided: bool = True
) -> float | None:
    """Smallest mean change Δ of per-case differences in [−1, 1] detected with ``power``, whatever its shape.

    ``minimum_detectable_effect`` assumes the change keeps the spread of the differences; a change that
    concentrates on a few cases (a share Δ of them breaking completely) adds up to Δ(1 − Δ) to their
    variance, and the reported interval is the union of t and the pseudo-case interval, whose
    variance carries a pseudo-case. Under no change that MDE had 35–75 % power, not 80 % (issue 12).
    Here Δ solves Δ = (t_{U−1, 1−α/2} + t_{U−1, power})·max(SE_t(Δ), SE_J(Δ)) with σ²(Δ) = σ₀² + Δ(1 − Δ),
    SE_t² = σ²/U and SE_J² = (U·σ² + ½)/((U + 1)(U + 2)) (``pseudocase``, on x = (d + 1)/2):
    a bound for any one-directional change, conservative for changes spread over many cases. With
    nothing differing (σ₀ = 0) it is about c²/(U + c²), the resolution of "0 of U units changed".
    ``sd_diff`` is σ₀ over units (for clustered data SE·√U); None when no Δ ≤ 1 is detectable.
    """
    units = operator.index(units)
    if units < 2 or sd_diff < 0 or not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"need units >= 2, sd_diff >= 0, alpha and power in (0, 1); got {units}, {sd_diff}, "
                         f"{alpha}, {power}")
    from scipy.stats import t as student_t  # lazily: scipy.stats costs a second of every start-up

    df = units - 1
    c = float(student_t.ppf(1 - alpha / 2 if two_sided else 1 - alpha, df) + student_t.ppf(power, df))

    def short(delta: np.ndarray) -> np.ndarray:
        var = sd_diff**2 + delta * (1 - delta)
        se = np.sqrt(np.maximum(var / units, (units * var + 0.5) / ((units + 1) * (units + 2))))
        return delta - c * se  # ≥ 0: detected with the power asked

    grid = np.linspace(1e-6, 1.0, 2001)
    ok = np.flatnonzero(short(grid) >= 0)
    if not ok.size:
        return None
    lo, hi = (grid[ok[0] - 1], grid[ok[0]]) if ok[0] > 0 else (0.0, grid[0])
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if short(np.array(mid)) >= 0 else (mid, hi)
    return float(hi)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in input order: reject H_i at level α iff adjusted_i ≤ α.

    Sorted ascending, the j-th (1-based) of m becomes max over i ≤ j of min(1, (m − i + 1)·p_(i)), so
    adjusted values are monotone in the raw ones and capped at 1 (Holm 1979; statistics.md §4: Holm
    for gate decisions across strata). Controls the family-wise error rate under any dependence.
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1 or np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError("pvalues must be a flat sequence of numbers in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted.tolist()
