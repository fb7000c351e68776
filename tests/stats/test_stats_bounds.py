"""Intervals respect what they bound (issue 11): [0, 1] for suite values, exact ends, ties by value."""

from __future__ import annotations

import numpy as np
import pytest

from passhat.stats import estimate_matrix, suite_intervals, wilson, wilson_score
from passhat.stats._resample import bca_ratio, resampling_units, unit_totals


def test_a_column_two_cases_support_stays_inside_0_1() -> None:
    # Only two of seven cases have 8 graded trials: pass^8 is 0 for one and 1 for the other. A t-interval
    # with one degree of freedom said [−5.85, 6.85].
    matrix = estimate_matrix([(8, 4), (8, 8)] + [(4, 2)] * 5, [1, 8], "pass_hat_k")
    for iv in suite_intervals(matrix, seed=0):
        assert 0.0 <= iv.low <= iv.estimate <= iv.high <= 1.0, iv


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95])
@pytest.mark.parametrize("n", [10, 29, 30, 40, 10_000])
def test_wilson_ends_are_exact_at_all_and_none(n: int, confidence: float) -> None:
    # A perfect run must be able to reach a bar of 1.0: at 90 % the upper bound of 30/30 was 1 − 2⁻⁵².
    assert wilson_score(1.0, n, confidence)[1] == 1.0
    assert wilson_score(0.0, n, confidence)[0] == 0.0
    assert wilson(n, n, confidence)[1] == 1.0 and wilson(0, n, confidence)[0] == 0.0


def test_all_passing_suite_reaches_one() -> None:
    assert suite_intervals(np.ones((30, 1)), seed=0)[0].high == 1.0
    assert suite_intervals(np.zeros((30, 1)), seed=0)[0].low == 0.0


@pytest.mark.parametrize(("successes", "seed"), [([8] * 6 + [6] + [8] * 7, 23), ([8] * 16 + [5] + [8] * 4, 76)])
def test_bca_ties_are_counted_by_value_not_by_float_path(successes: list[int], seed: int) -> None:
    # Every case at 8/8 but one: resamples that draw the imperfect case once tie with the estimate
    # exactly. Whether the float quotient of the resample equals S/N bit for bit depends on k, so
    # counting ties by float equality moved z0 and made the lower bound rise by 0.018 from k = 3 to 4.
    ks = list(range(1, 9))
    values = estimate_matrix([(8, c) for c in successes], ks, "pass_hat_k")
    sums, counts = unit_totals(values, resampling_units(None, len(successes)))
    rng = np.random.default_rng(seed)
    _, low, high, _ = bca_ratio(sums, counts, rng=rng, confidence=0.95, n_resamples=2000)
    assert np.all(np.diff(low) <= 1e-12), low
    assert np.all(np.diff(high) <= 1e-12), high


@pytest.mark.parametrize("k", [1, 4])
def test_more_evidence_never_lowers_the_lower_bound(k: int) -> None:
    # 30 cases at 8/8 against 29 at 8/8 and one at 7/8: the perfect suite's bound must not be lower.
    perfect = estimate_matrix([(8, 8)] * 30, [k], "pass_hat_k")
    one_short = estimate_matrix([(8, 7)] + [(8, 8)] * 29, [k], "pass_hat_k")
    for confidence in (0.9, 0.95):
        best = suite_intervals(perfect, seed=3, confidence=confidence)[0]
        worse = suite_intervals(one_short, seed=3, confidence=confidence)[0]
        assert worse.low <= best.low, (worse, best)
