import math

import numpy as np
import pytest
from scipy.stats import beta

from passhat.stats import clopper_pearson, estimate_matrix, suite_interval, suite_intervals
from passhat.stats._resample import resampling_units, unit_totals
from passhat.stats.pseudocase import pseudocase_interval

VALUES = [1.0, 0.5, 0.875, 0.0, 1.0, 0.25, 1.0, 0.75, 0.625, 1.0, 0.0, 0.875]


def test_reproducible_with_the_same_seed():
    values = np.random.default_rng(0).random(40)
    assert suite_interval(values, seed=42) == suite_interval(values, seed=42)
    assert suite_interval(values, seed=42) != suite_interval(values, seed=43)


def test_0_1_values_give_clopper_pearson_exactly():
    # With 0/1 per-case values the pseudo-fail gives the passes Beta(s, f + 1) weight and the pseudo-pass
    # Beta(s + 1, f): Gaffke's bounds are the Clopper–Pearson bounds, computed in closed form.
    for s, u in ((19, 20), (7, 20), (1, 12), (29, 30)):
        interval = suite_interval([1.0] * s + [0.0] * (u - s), seed=0)
        assert interval.method == "gaffke"
        assert (interval.low, interval.high) == pytest.approx(clopper_pearson(s, u, 0.95), rel=1e-10)
    assert (suite_interval([1.0] * 19 + [0.0], seed=0, confidence=0.9).low
            == pytest.approx(beta.ppf(0.05, 19, 2), rel=1e-10))


def test_equal_values_have_the_closed_form_of_the_pseudo_case_weight():
    # Every case at v: the statistic is v·(1 − W) (lower) and v + (1 − v)·W (upper), W ~ Beta(1, U) the
    # pseudo-case's weight, so the bounds are v·(α/2)^{1/U} and v + (1 − v)·(1 − (α/2)^{1/U}).
    v, u = 0.875, 20
    interval = suite_interval([v] * u, seed=0, n_resamples=40_000)
    q = 0.025 ** (1 / u)
    assert interval.estimate == v
    assert (interval.low, interval.high) == pytest.approx((v * q, v + (1 - v) * (1 - q)), abs=0.004)


def test_gamma_weights_per_type_equal_the_dirichlet_over_cases():
    # The module draws one Gamma(m) weight per distinct value instead of m Exp(1) weights: the same
    # Dirichlet. Checked against the bounds computed case by case with numpy's Dirichlet.
    values = np.array(VALUES)
    interval = suite_interval(values, seed=1, n_resamples=40_000)
    w = np.random.default_rng(2).dirichlet(np.ones(len(values) + 1), 40_000)
    lower, upper = w[:, :-1] @ values, w[:, :-1] @ values + w[:, -1]
    assert interval.low == pytest.approx(np.quantile(lower, 0.025), abs=0.006)
    assert interval.high == pytest.approx(np.quantile(upper, 0.975), abs=0.006)
    assert 0.0 <= interval.low < interval.estimate < interval.high <= 1.0
    assert (interval.n_cases, interval.n_units, interval.confidence) == (12, 12, 0.95)


def test_every_draw_keeps_pass_hat_k_ordered_so_the_bounds_are():
    # The same draws serve every k: per draw the pass^k statistic falls with k, so do its quantiles.
    counts = [(8, c) for c in (8, 7, 6, 8, 3, 8, 5, 8, 8, 2, 7, 8)]
    curve = suite_intervals(estimate_matrix(counts, list(range(1, 8)), "pass_hat_k"), seed=4)
    assert all(a.low >= b.low and a.high >= b.high for a, b in zip(curve, curve[1:], strict=False))


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


def test_all_pass_reaches_one_and_its_lower_bound_is_clopper_pearsons():
    interval = suite_interval([1.0] * 30, seed=0)
    assert interval.high == 1.0 and interval.estimate == 1.0
    assert interval.low == pytest.approx(0.025 ** (1 / 30), rel=1e-10)  # 0.885: never "100 %"


def test_all_fail_with_groups_counts_each_group_once():
    # 4 families of 3 cases, all failing: the upper bound of 0 of 4 units, 1 − (α/2)^{1/4}, not of 12 cases.
    interval = suite_interval([0.0] * 12, [f"g{i // 3}" for i in range(12)], seed=0, n_resamples=40_000)
    assert interval.n_units == 4 and interval.low == 0.0
    assert interval.high == pytest.approx(1 - 0.025 ** (1 / 4), abs=0.006)


def test_single_case_and_single_group():
    single = suite_interval([0.5], seed=0)
    assert single.n_units == 1
    assert 0.0 < single.low < 0.5 < single.high < 1.0
    one_group = suite_interval([1.0, 0.0, 1.0], ["g", "g", "g"], seed=0)
    assert one_group.n_units == 1 and one_group.low < 2 / 3 < one_group.high
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        suite_interval([3.5], seed=0)  # not a per-case score


def test_batched_columns_agree_with_single_column_calls():
    # Columns computed together share draws (one per distinct unit row); one computed alone draws its own
    # from the same distribution: equal estimates, bounds equal up to Monte Carlo error.
    rng = np.random.default_rng(7)
    matrix = rng.random((50, 4))
    groups = [f"g{i % 17}" for i in range(50)]
    batched = suite_intervals(matrix, groups, seed=3)
    for j in range(4):
        single = suite_interval(matrix[:, j], groups, seed=3)
        assert batched[j].estimate == single.estimate
        assert (batched[j].low, batched[j].high) == pytest.approx((single.low, single.high), abs=0.02)


def test_nan_excludes_a_case_from_one_column():
    matrix = estimate_matrix([(4, 3), (2, 2), (4, 1), (4, 4)], [1, 3], "pass_hat_k")
    k1, k3 = suite_intervals(matrix, seed=0)
    assert (k1.n_cases, k3.n_cases) == (4, 3)
    assert k3.estimate == pytest.approx(np.nanmean(matrix[:, 1]))


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (np.empty((0, 1)), "at least one case"),
        (np.array([[np.nan], [np.nan]]), "no values"),
        (np.array([[np.inf], [1.0]]), "finite"),
        (np.array([[1.5], [1.0]]), r"\[0, 1\]"),
        (np.ones(3), "2-D"),
    ],
)
def test_bad_inputs_raise(matrix, message):
    with pytest.raises(ValueError, match=message):
        suite_intervals(matrix, seed=0)


def test_coverage_simulation():
    """Nominal 95% Gaffke bounds over tasks cover the super-population pass^k (statistics.md §3.3: ≈0.95)."""
    rng = np.random.default_rng(2024)
    a, b = 4.0, 1.5
    truth = [a / (a + b), math.prod((a + i) / (a + b + i) for i in range(4))]  # E[p], E[p^4] for Beta(a, b)
    reps, tasks, trials = 200, 30, 8
    covered = np.zeros(2)
    for rep in range(reps):
        c = rng.binomial(trials, rng.beta(a, b, tasks))
        matrix = estimate_matrix([(trials, int(x)) for x in c], [1, 4], "pass_hat_k")
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
    assert covered_grouped / reps >= 0.93  # Gaffke's bounds hold each tail for any population: they over-cover here
    assert covered_naive / reps < 0.88  # treating correlated tasks as independent under-covers


def test_laplace_pseudocase_interval_is_the_bayes_laplace_interval_for_0_1_values():
    # The suite interval before issue 22 (kept in bench/bench_coverage.py as "before"): s of U cases pass
    # every trial, the rest none: Beta(s + 1, U − s + 1), a pseudo-pass and a pseudo-fail.
    for s, u in ((7, 20), (1, 12), (29, 30)):
        values = np.array([1.0] * s + [0.0] * (u - s)).reshape(-1, 1)
        low, high = pseudocase_interval(*unit_totals(values, resampling_units(None, u)), 0.9)
        assert (low[0], high[0]) == pytest.approx((beta.ppf(0.05, s + 1, u - s + 1),
                                                   beta.ppf(0.95, s + 1, u - s + 1)), rel=1e-10)
