"""Which cases got worse: a per-case exact test with multiplicity control for discrete data.

A case that passed every baseline trial and fails one trial now is not evidence of a regression: a
case with p = 0.95 does that in a third of 8-trial reruns, and over 30 such cases an unchanged agent
"newly failed" 44–100 % of the time (issue 12). A new failure is a case whose pass rate dropped by a
test that holds its error rate:

- per case, the one-sided Fisher exact test of "the candidate passes less often than the baseline":
  conditional on the case's total passes K over both runs, the candidate's passes are hypergeometric,
  p = P(X ≤ c_cand) with X ~ Hypergeom(n_base + n_cand, K, n_cand) (``fisher_drop``);
- across cases, Benjamini–Hochberg over the cases that can be significant at all (``discrete_bh``).
  Fisher's test is discrete: a case whose most extreme table given K cannot reach α — every case that
  passed everything in both runs, most cases with a failure or two — can never be rejected, so it is
  left out of the count of tests (the pruning of Tarone 1990 and Gilbert 2005 for discrete tests).
  Under no change at all the chance of any rejection is the false discovery rate, ≤ α: an unchanged
  agent fails the rule at most α of the time. When some cases did break, BH keeps its power — five
  cases going 4/4 → 0/4 (p = 1/70 each) are all flagged, which a family-wise correction (α/5 = 0.01)
  would miss — and at most a share α of the flagged cases are false.

Only cases that passed every baseline trial can be new failures (the seed's 上一版通过的题): their
p-value is Fisher's; the others get 1. Whether a table has that shape is decided from the margins
alone when computing the attainable minimum (the most extreme table given K has the baseline all
passing exactly when K ≥ n_base), as Tarone's procedure requires.
"""

from __future__ import annotations

import numpy as np


def fisher_drop(base_passes: np.ndarray, base_n: np.ndarray, cand_passes: np.ndarray,
                cand_n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per case (p, p_min): one-sided Fisher p-value of a drop for cases fully passing in the baseline
    (1 otherwise), and the smallest p-value the case's margins allow (1 if the baseline cannot be all-pass).

    Equal to ``scipy.stats.fisher_exact([[c_b, n_b − c_b], [c_c, n_c − c_c]], alternative="greater")``.
    """
    from scipy.stats import hypergeom  # lazily: scipy.stats costs a second of every start-up

    cb, nb, cc, nc = (np.asarray(x, dtype=int) for x in (base_passes, base_n, cand_passes, cand_n))
    total, passes = nb + nc, cb + cc
    eligible = (nb > 0) & (cb == nb) & (nc > 0)
    p = np.where(eligible, hypergeom.cdf(cc, total, passes, nc), 1.0)
    extreme = np.maximum(0, passes - nb)  # the fewest candidate passes the margins allow
    reachable = (nb > 0) & (nc > 0) & (passes >= nb)
    p_min = np.where(reachable, hypergeom.cdf(extreme, total, passes, nc), 1.0)
    return np.minimum(p, 1.0), np.minimum(p_min, 1.0)


def discrete_bh(p: np.ndarray, p_min: np.ndarray, alpha: float) -> tuple[np.ndarray, int]:
    """(rejected, m): Benjamini–Hochberg at ``alpha`` over the m hypotheses whose ``p_min`` ≤ ``alpha``.

    Hypotheses that cannot reach ``alpha`` can never be rejected and do not count. Example: p = (0.014,
    0.014, 0.5, 1) with p_min = (0.014, 0.014, 0.5, 1) at α = 0.05: m = 2, both rejected (0.014 ≤ 0.025).
    """
    p, p_min = np.asarray(p, dtype=float), np.asarray(p_min, dtype=float)
    testable = p_min <= alpha
    m = int(np.count_nonzero(testable))
    rejected = np.zeros(p.shape, dtype=bool)
    if m:
        from scipy.stats import false_discovery_control

        adjusted = false_discovery_control(p[testable], method="bh")
        rejected[testable] = adjusted <= alpha
    return rejected, m
