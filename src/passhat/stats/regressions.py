"""Which cases got worse: a per-case exact test with multiplicity control for discrete data.

A case that passed every baseline trial and fails one trial now is not evidence of a regression: a
case with p = 0.95 does that in a third of 8-trial reruns, and over 30 such cases an unchanged agent
"newly failed" 44–100 % of the time (issue 12). A new failure is a case whose pass rate dropped by a
test that holds its error rate:

- per case, the one-sided Fisher exact test of "the candidate passes less often than the baseline":
  conditional on the case's total passes K over both runs, the candidate's passes are hypergeometric,
  p = P(X ≤ c_cand) with X ~ Hypergeom(n_base + n_cand, K, n_cand) (``fisher_drop``);
- across cases, Heyse's (2011) discrete form of Benjamini–Hochberg, calibrated exactly (``drop_test``).
  Fisher's test is discrete, and given a case's margins it has one table that makes it a new failure:
  the baseline passing every trial, which happens by chance with probability p_min (1/70 for 4/4 → 0/4,
  1/12,870 for 8/8 → 0/8). BH step j compares the j-th smallest p-value v with F̄(v)/j, where
  F̄(v) = Σ_t P(p_t ≤ v) is the expected number of chance rejections at v (Heyse): a case whose
  extreme table is far likelier than v adds nothing there, where Tarone's pruning counted every case
  that could reach α as a whole test. The statistic G = min_j F̄(p_(j))/j is then calibrated under "no
  case dropped" by Monte Carlo from the very distribution that hypothesis fixes — each case at its
  extreme with probability p_min, independently — so an unchanged agent FAILs the rule at most α of the
  time, exactly (not via Heyse's approximation, which can exceed α; Döhler et al. 2018). The cases
  named are those of BH's last step below the critical value.

What it buys (``bench/sim_power.py``, 150 cases): at 8 trials, the most reliable case falling to
p = 0.5 is caught 19–40 % of the time (5–18 % before) and three such 58–81 % (13–45 %), since next to
cases whose 16 trials split 9–7 an 8/8 → 4/8 is thousands of times rarer; at 4 trials three cases
breaking completely are caught 98–100 % of the time (3–100 %). What no test can buy: at 4 trials a case
going 4/4 → 0/4 is what a case with p = 0.5 does 1 time in 256, and an unchanged agent with many such
cases shows one somewhere in 12–20 % of reruns of 150 cases; a rule that FAILed on it would FAIL an
unchanged agent that often. Unchanged agents tripped the rule 0.7–2.5 % of the time.

Only cases that passed every baseline trial can be new failures (the seed's 上一版通过的题): their
p-value is Fisher's; the others get 1. Whether a table has that shape is decided from the margins
alone when computing the attainable minimum (the most extreme table given K has the baseline all
passing exactly when K ≥ n_base), as Tarone's procedure requires.
"""

from __future__ import annotations

from typing import NamedTuple

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


class DropTest(NamedTuple):
    """Which cases dropped significantly, and the p-value of "no case dropped"."""

    rejected: np.ndarray
    """Per case: a significant drop (only cases that passed every baseline trial can be)."""
    p_value: float
    """Monte Carlo p-value of "no case dropped", exact given each case's total passes (1 with no drop)."""
    testable: int
    """Cases whose margins allow a drop significant at α at all (Tarone's count; reported, not used)."""


def drop_test(p: np.ndarray, p_min: np.ndarray, alpha: float, *, rng: np.random.Generator,
              n_draws: int = 4000) -> DropTest:
    """Heyse's discrete Benjamini–Hochberg statistic, calibrated exactly under "no case dropped" (module docstring).

    ``p`` and ``p_min`` are ``fisher_drop``'s. Example: five cases 4/4 → 0/4 among 20 reliable ones that
    stayed 4/4 are all named (p ≈ 0.0002), while one 4/4 → 0/4 next to twelve cases whose 8 trials split
    4–4 (each could have split 4/0 by chance, 1/70) is not: chance gives that 16 % of the time.
    """
    p, p_min = np.asarray(p, dtype=float), np.asarray(p_min, dtype=float)
    testable = int(np.count_nonzero(p_min <= alpha))
    levels, counts = np.unique(p_min[p_min < 1], return_counts=True)  # each case's extreme table, by probability
    events = p < 1  # a case that passed every baseline trial and not every candidate trial is at its extreme
    if not events.any() or not levels.size:
        return DropTest(np.zeros(p.shape, dtype=bool), 1.0, testable)
    f_bar = np.cumsum(levels * counts)  # Σ_t P(p_t ≤ v) under no drop, at each level v
    observed = np.array([np.count_nonzero(events & (p <= v)) for v in levels])
    g_obs = _statistic(f_bar, observed[None, :])[0]
    null = rng.binomial(counts, levels, size=(n_draws, levels.size)).cumsum(axis=1)
    g_null = _statistic(f_bar, null)
    tol = 1e-12 * g_obs
    p_value = float((1 + np.count_nonzero(g_null <= g_obs + tol)) / (n_draws + 1))
    rejected = np.zeros(p.shape, dtype=bool)
    allowed = int(np.floor(alpha * (n_draws + 1))) - 1  # resamples a critical value may have at or below it
    if p_value <= alpha and allowed >= 1:
        critical = max(g_obs, float(np.sort(g_null)[allowed - 1]))
        ratios = np.where(observed > 0, f_bar / np.maximum(observed, 1), np.inf)
        hit = np.flatnonzero(ratios <= critical + tol)
        rejected = events & (p <= levels[hit.max()])
    return DropTest(rejected, p_value, testable)


def _statistic(f_bar: np.ndarray, cumulative: np.ndarray) -> np.ndarray:
    """min over levels holding an event of F̄(v)/#(p ≤ v): Heyse's BH step, as one number per row."""
    ratio = np.where(cumulative > 0, f_bar / np.maximum(cumulative, 1), np.inf)
    # a level with no event of its own adds no p-value at that level: its ratio is not a BH step
    own = np.diff(np.concatenate([np.zeros((cumulative.shape[0], 1)), cumulative], axis=1), axis=1) > 0
    return np.where(own, ratio, np.inf).min(axis=1)
