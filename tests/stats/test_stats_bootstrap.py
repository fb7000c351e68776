import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from passhat.stats import estimate_matrix, suite_interval, suite_intervals, wilson, wilson_score

VALUES = [1.0, 0.5, 0.875, 0.0, 1.0, 0.25, 1.0, 0.75, 0.625, 1.0, 0.0, 0.875]


def test_reproducible_with_the_same_seed():
    values = np.random.default_rng(0).random(40)
    assert suite_interval(values, seed=42) == suite_interval(values, seed=42)
    assert suite_interval(values, seed=42) != suite_interval(values, seed=43)


def test_bca_interval_contains_the_estimate():
    interval = suite_interval(VALUES, seed=1)
    assert interval.method == "bca"
    assert interval.estimate == pytest.approx(np.mean(VALUES))
    assert 0.0 <= interval.low < interval.estimate < interval.high <= 1.0
    assert (interval.n_cases, interval.n_units, interval.confidence) == (12, 12, 0.95)


def test_groups_that_pass_or_fail_together_widen_the_interval():
    # 8 families of 5 templated cases; each family passes or fails as one.
    family_result = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    values = [r for r in family_result for _ in range(5)]
    groups = [f"family{f}" for f in range(8) for _ in range(5)]
    naive = suite_interval(values, seed=5)
    clustered = suite_interval(values, groups, seed=5)
    assert clustered.estimate == naive.estimate
    assert clustered.n_units == 8 and naive.n_units == 40
    assert clustered.high - clustered.low > 1.5 * (naive.high - naive.low)


def test_all_pass_falls_back_to_wilson_on_fully_passing_cases():
    interval = suite_interval([1.0] * 30, seed=0)
    assert interval.method == "wilson_fully_passing"
    assert (interval.low, interval.high) == pytest.approx(wilson(30, 30))
    assert interval.estimate == 1.0


def test_all_fail_with_groups_counts_each_group_once():
    interval = suite_interval([0.0] * 12, ["a"] * 6 + ["b"] * 3 + [None] * 3, seed=0)
    assert interval.method == "wilson_fully_passing"
    assert interval.n_units == 5
    assert (interval.low, interval.high) == pytest.approx(wilson(0, 5))


def test_identical_fractional_values_are_not_claimed_exact():
    # Every task at 7/8: sample spread is zero, but a zero-width interval would be a false certainty.
    interval = suite_interval([0.875] * 5, seed=0)
    assert interval.method == "wilson_bounded"
    assert (interval.low, interval.high) == pytest.approx(wilson_score(0.875, 5))


def test_single_case_and_single_group():
    single = suite_interval([0.5], seed=0)
    assert (single.method, single.n_units) == ("wilson_bounded", 1)
    one_group = suite_interval([1.0, 0.0, 1.0], ["g", "g", "g"], seed=0)
    assert one_group.method == "wilson_bounded"
    assert (one_group.low, one_group.high) == pytest.approx(wilson_score(2 / 3, 1))
    assert suite_interval([3.5], seed=0).method == "degenerate"  # not a [0, 1] score: nothing honest to add


def test_t_interval_when_bca_is_undefined():
    # One resample puts the estimate outside the bootstrap distribution: z0 is infinite, BCa is NaN.
    interval = suite_interval(VALUES, seed=0, n_resamples=1)
    assert interval.method == "t"
    half = student_t.ppf(0.975, 11) * np.std(VALUES, ddof=1) / math.sqrt(12)
    assert (interval.low, interval.high) == pytest.approx((np.mean(VALUES) - half, np.mean(VALUES) + half))


def test_batched_columns_equal_single_column_calls():
    rng = np.random.default_rng(7)
    matrix = rng.random((50, 4))
    groups = [f"g{i % 17}" for i in range(50)]
    batched = suite_intervals(matrix, groups, seed=3, n_resamples=800)
    for j in range(4):
        single = suite_interval(matrix[:, j], groups, seed=3, n_resamples=800)
        assert batched[j].estimate == single.estimate
        assert batched[j].method == single.method == "bca"
        # Same resamples; only BLAS summation order may differ in the last bits.
        assert (batched[j].low, batched[j].high) == pytest.approx((single.low, single.high), rel=1e-12)


def test_nan_excludes_a_case_from_one_column():
    matrix = estimate_matrix([(4, 3), (2, 2), (4, 1), (4, 4)], [1, 3], "pass^k")
    k1, k3 = suite_intervals(matrix, seed=0)
    assert (k1.n_cases, k3.n_cases) == (4, 3)
    assert k3.estimate == pytest.approx(np.nanmean(matrix[:, 1]))


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (np.empty((0, 1)), "at least one case"),
        (np.array([[np.nan], [np.nan]]), "no values"),
        (np.array([[np.inf], [1.0]]), "finite"),
        (np.ones(3), "2-D"),
    ],
)
def test_bad_inputs_raise(matrix, message):
    with pytest.raises(ValueError, match=message):
        suite_intervals(matrix, seed=0)


def test_bca_coverage_simulation():
    """Nominal 95% BCa over tasks covers the super-population pass^k (statistics.md §3.3: ≈0.95)."""
    rng = np.random.default_rng(2024)
    a, b = 4.0, 1.5
    truth = [a / (a + b), math.prod((a + i) / (a + b + i) for i in range(4))]  # E[p], E[p^4] for Beta(a, b)
    reps, tasks, trials = 200, 30, 8
    covered = np.zeros(2)
    for rep in range(reps):
        c = rng.binomial(trials, rng.beta(a, b, tasks))
        matrix = estimate_matrix([(trials, int(x)) for x in c], [1, 4], "pass^k")
        for j, interval in enumerate(suite_intervals(matrix, seed=rep, n_resamples=1000)):
            covered[j] += interval.low <= truth[j] <= interval.high
    coverage = covered / reps
    assert np.all((coverage >= 0.88) & (coverage <= 0.99)), coverage


def test_clustered_bootstrap_coverage_simulation():
    """Families of 4 near-identical tasks: only resampling whole families keeps 95% coverage."""
    rng = np.random.default_rng(1)
    families, per_family, reps, truth = 20, 4, 300, 4 / 5.5
    groups = [f"family{f}" for f in range(families) for _ in range(per_family)]
    covered_naive = covered_grouped = 0
    for rep in range(reps):
        family_p = rng.beta(4, 1.5, families)
        p = np.clip(np.repeat(family_p, per_family) + rng.normal(0, 0.05, families * per_family), 0, 1)
        values = rng.binomial(8, p) / 8
        naive = suite_interval(values, seed=rep, n_resamples=1000)
        grouped = suite_interval(values, groups, seed=rep, n_resamples=1000)
        covered_naive += naive.low <= truth <= naive.high
        covered_grouped += grouped.low <= truth <= grouped.high
    assert 0.88 <= covered_grouped / reps <= 0.99
    assert covered_naive / reps < 0.88  # treating correlated tasks as independent under-covers
