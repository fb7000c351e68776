import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import beta, binomtest, chi2, ttest_1samp, ttest_rel

from passhat.stats import (
    holm,
    mcnemar_midp,
    mcnemar_score,
    minimum_detectable_effect,
    paired_difference,
    paired_differences,
    tango_interval,
    wilson,
)


def _versions(seed=0, cases=40):
    rng = np.random.default_rng(seed)
    skill = rng.beta(3, 1.5, cases)
    base = rng.binomial(8, skill) / 8
    cand = rng.binomial(8, np.clip(skill + 0.08, 0, 1)) / 8
    return base, cand


def pseudocase_d(d, confidence=0.95):
    """The pseudo-case interval on cases for differences, from its formula: x = (d + 1)/2, pseudo-case ¼, ½, ¼."""
    x, u = (np.asarray(d) + 1) / 2, len(d)
    m = (x.sum() + 0.5) / (u + 1)
    v = (((x - m) ** 2).sum() + 0.25 * m**2 + 0.5 * (0.5 - m) ** 2 + 0.25 * (1 - m) ** 2) / ((u + 1) * (u + 2))
    nu = m * (1 - m) / v - 1
    tail = (1 - confidence) / 2
    low, high = beta.ppf(tail, m * nu, (1 - m) * nu), beta.ppf(1 - tail, m * nu, (1 - m) * nu)
    below = beta.cdf(0.5, m * nu, (1 - m) * nu)
    return 2 * low - 1, 2 * high - 1, min(1.0, 2 * min(below, 1 - below))


def test_paired_difference_reports_delta_interval_test_and_correlation():
    base, cand = _versions()
    result = paired_difference(base, cand, seed=1)
    d = cand - base
    assert result.delta == pytest.approx(d.mean())
    assert (result.method, result.test) == ("t_pseudocase", "paired_t")
    reference = ttest_rel(cand, base)
    assert result.p_test == pytest.approx(reference.pvalue)
    t_low, t_high = reference.confidence_interval(0.95)
    j_low, j_high, j_p = pseudocase_d(d)
    assert (result.low, result.high) == pytest.approx((min(t_low, j_low), max(t_high, j_high)), rel=1e-9)
    assert result.p_pseudocase == pytest.approx(j_p, rel=1e-9)
    assert result.p_value == max(result.p_test, result.p_pseudocase)
    assert result.se == pytest.approx(d.std(ddof=1) / np.sqrt(40))
    assert result.correlation == pytest.approx(np.corrcoef(base, cand)[0, 1])
    assert result.sd_diff == pytest.approx(d.std(ddof=1))
    assert (result.n_cases, result.n_units) == (40, 40)
    assert result == paired_difference(base, cand, seed=1)


def test_singleton_groups_reproduce_ttest_rel():
    base, cand = _versions(seed=3)
    grouped = paired_difference(base, cand, [str(i) for i in range(40)], seed=1)
    assert grouped.test == "paired_t_clustered"
    assert grouped.p_test == pytest.approx(ttest_rel(cand, base).pvalue, rel=1e-10)
    ungrouped = paired_difference(base, cand, seed=1)
    assert (grouped.low, grouped.high, grouped.p_value) == pytest.approx((ungrouped.low, ungrouped.high,
                                                                          ungrouped.p_value), rel=1e-10)


def test_equal_sized_groups_are_a_t_test_on_family_means():
    # With equal group sizes the clustered SE (U/(U−1) factor) is sd(family means)/√U: the interval and
    # p-value must equal a one-sample t-test on the 12 family means, an independent computation.
    base, cand = _versions(seed=4, cases=36)
    groups = [f"f{i // 3}" for i in range(36)]
    result = paired_difference(base, cand, groups, confidence=0.9)
    family_means = (cand - base).reshape(12, 3).mean(axis=1)
    reference = ttest_1samp(family_means, 0.0)
    assert result.n_units == 12 and result.test == "paired_t_clustered"
    assert result.p_test == pytest.approx(reference.pvalue, rel=1e-10)
    t_low, t_high = reference.confidence_interval(0.9)
    assert result.low <= t_low and result.high >= t_high  # the union with the pseudo-case interval


def test_small_suite_with_three_drops_is_not_called_significant():
    # 3 of 16 cases drop by 0.5, the rest unchanged: the paired t-test gives p = 0.083, and the interval
    # now agrees with it. The paired BCa excluded 0 here ([−0.219, −0.031] at seed 0): the false alarm
    # that motivated docs/design/004-paired-intervals.md.
    base, cand = [1.0] * 16, [0.5] * 3 + [1.0] * 13
    result = paired_difference(base, cand)
    assert result.p_test == pytest.approx(0.0825, abs=5e-4)
    assert result.low < 0 < result.high and result.p_value >= result.p_test
    bca = paired_difference(base, cand, seed=0, interval="bca")
    assert bca.p_test < 0.05 and bca.test == "bootstrap_bca"  # BCa alone still excludes 0 ...
    assert bca.low < 0 < bca.high and bca.p_value >= 0.05  # ... the union with the pseudo-case interval does not


@pytest.mark.parametrize("interval", ["t", "bca"])
def test_interval_excludes_zero_exactly_when_the_test_rejects(interval):
    rng = np.random.default_rng(12)
    checked = 0
    for rep in range(60):
        cases = int(rng.integers(8, 30))
        base = rng.binomial(4, rng.beta(3, 1.5, cases)) / 4
        cand = np.where(rng.random(cases) < 0.3, rng.binomial(4, 0.4, cases) / 4, base)
        for confidence in (0.9, 0.95):
            r = paired_difference(base, cand, seed=rep, confidence=confidence, interval=interval, n_resamples=500)
            checked += 1
            assert (r.low > 0 or r.high < 0) == (r.p_value < 1 - confidence), (rep, r)
    assert checked > 60


def test_batched_columns_equal_single_column_calls():
    rng = np.random.default_rng(7)
    base, cand = rng.binomial(8, 0.7, (50, 4)) / 8, rng.binomial(8, 0.65, (50, 4)) / 8
    base[3, 2] = np.nan  # excluded from column 2 only
    groups = [f"g{i % 17}" for i in range(50)]
    for interval in ("t", "bca"):
        batched = paired_differences(base, cand, groups, interval=interval, seed=3, n_resamples=800)
        for j in range(4):
            keep = ~np.isnan(base[:, j])
            single = paired_difference(base[keep, j], cand[keep, j], [g for g, k in zip(groups, keep, strict=True) if k],
                                       interval=interval, seed=3, n_resamples=800)
            assert batched[j].method == single.method == f"{interval}_pseudocase"
            assert batched[j].delta == single.delta and batched[j].n_cases == keep.sum()
            if interval == "t":
                assert batched[j] == single
            elif j != 2:  # the same resamples of the same units; only BLAS summation order differs
                assert (batched[j].low, batched[j].high) == pytest.approx((single.low, single.high), rel=1e-12)


def test_binary_columns_use_tango_and_mcnemar():
    # 3 cases only the base passes, 12 only the candidate, 2 both (statistics.md §4: b = 3, c = 12).
    base = np.array([1.0] * 3 + [0.0] * 12 + [1.0] * 2)
    cand = np.array([0.0] * 3 + [1.0] * 12 + [1.0] * 2)
    result = paired_difference(base, cand, binary=True)
    assert (result.method, result.test, result.discordant) == ("tango_pseudocase", "mcnemar", (3, 12))
    assert result.p_test == pytest.approx(mcnemar_score(3, 12))
    assert result.p_midp == pytest.approx(697 / 32768, abs=1e-12)
    t_low, t_high = tango_interval(3, 12, 17)
    j_low, j_high, _ = pseudocase_d(cand - base)
    assert (result.low, result.high) == pytest.approx((min(t_low, j_low), max(t_high, j_high)), rel=1e-9)
    assert result.low > 0 and result.p_value < 0.05
    # The same values are not a paired 2×2 table when a group holds several cases: clustered t instead.
    grouped = paired_difference(base, cand, ["fam"] * 2 + [None] * 15, binary=True)
    assert (grouped.method, grouped.test, grouped.discordant) == ("t_pseudocase", "paired_t_clustered", None)
    with pytest.raises(ValueError, match="other than 0 and 1"):
        paired_difference([0.5, 1.0], [1.0, 1.0], binary=True)


def test_tango_matches_propcis_and_solves_the_score_equation():
    # PropCIs::scoreci.mp(25, 28, 618) at 90 % (Tango 1998) → [−0.0148, +0.0247] for (28 − 25)/618.
    low, high = tango_interval(25, 28, 618, 0.90)
    assert (round(low, 4), round(high, 4)) == (-0.0148, 0.0247)
    assert tango_interval(28, 25, 618, 0.90) == pytest.approx((-high, -low), abs=1e-12)
    z = 1.959963984540054
    for b, c, n in [(40, 20, 160), (13, 3, 400), (1, 7, 50), (0, 5, 25)]:
        low, high = tango_interval(b, c, n)
        for delta, target in ((low, z), (high, -z)):
            # The restricted MLE solved numerically (not by the closed-form root) gives the same score.
            grid = np.linspace(max(0.0, -delta) + 1e-9, (1 - delta) / 2 - 1e-9, 200_001)
            loglik = c * np.log(grid + delta) + b * np.log(grid) + (n - b - c) * np.log(1 - 2 * grid - delta)
            q = grid[np.argmax(loglik)]
            assert (c - b - n * delta) / np.sqrt(n * (2 * q + delta - delta**2)) == pytest.approx(target, abs=1e-3)
    # No discordant pair: ± z²/(n + z²), the Wilson bound for 0 of n.
    assert tango_interval(0, 0, 20) == pytest.approx((-wilson(0, 20)[1], wilson(0, 20)[1]))
    assert tango_interval(0, 30, 30)[1] == 1.0 and tango_interval(30, 0, 30)[0] == -1.0
    with pytest.raises(ValueError):
        tango_interval(6, 6, 10)


def test_tango_and_mcnemar_agree_on_every_small_table():
    for n in (1, 5, 12, 25):
        for b in range(n + 1):
            for c in range(n + 1 - b):
                low, high = tango_interval(b, c, n, 0.9)
                assert low <= (c - b) / n <= high
                assert (low > 0 or high < 0) == (mcnemar_score(b, c) < 0.1), (b, c, n)


def test_mcnemar_score_holds_its_size_by_exact_enumeration():
    # Under no change each case is discordant either way with probability q: sum the trinomial
    # probabilities of every table the test rejects at 0.05. Fagerland et al. (2013) accept the
    # asymptotic test because its excesses are small; here the exact size stays below 0.055.
    for n in (15, 30, 60):
        for q in (0.05, 0.1, 0.2):
            size = 0.0
            for b in range(n + 1):
                c = np.arange(n + 1 - b)
                rejects = np.array([mcnemar_score(b, int(x)) < 0.05 for x in c])
                log_pmf = (gammaln(n + 1) - gammaln(b + 1) - gammaln(c + 1) - gammaln(n - b - c + 1)
                           + (b + c) * np.log(q) + (n - b - c) * np.log(1 - 2 * q))
                size += float(np.exp(log_pmf)[rejects].sum())
            assert size < 0.055, (n, q, size)


def test_mcnemar_score_is_the_uncorrected_chi_square():
    assert mcnemar_score(3, 12) == pytest.approx(chi2.sf(81 / 15, 1))
    assert mcnemar_score(3, 12) == pytest.approx(0.0201, abs=5e-5)
    assert mcnemar_score(0, 0) == 1.0 and mcnemar_score(4, 4) == 1.0
    with pytest.raises(ValueError):
        mcnemar_score(-1, 2)


def test_grouped_differences_widen_interval_and_raise_p_value():
    rng = np.random.default_rng(5)
    family_delta = rng.normal(0.05, 0.2, 10)
    d = np.repeat(family_delta, 4) + rng.normal(0, 0.01, 40)
    base = np.full(40, 0.5)
    groups = [f"f{f}" for f in range(10) for _ in range(4)]
    naive = paired_difference(base, base + d, seed=2)
    clustered = paired_difference(base, base + d, groups, seed=2)
    assert clustered.high - clustered.low > 1.5 * (naive.high - naive.low)
    assert clustered.p_value > naive.p_value
    assert clustered.correlation is None  # base is constant


def test_identical_versions_give_p_one_and_the_pseudocase_interval():
    # No difference anywhere: no variance to estimate, so the pseudo-case decides: Beta(991.5, 991.5) on x.
    result = paired_difference([1.0] * 30, [1.0] * 30, seed=0)
    assert result.p_value == 1.0 and result.p_test is None
    assert (result.method, result.test) == ("pseudocase", "pseudocase")
    low, high, _ = pseudocase_d([0.0] * 30)
    assert (result.low, result.high) == pytest.approx((low, high), rel=1e-9) and low == pytest.approx(-high)
    assert result.correlation is None
    # The same table read as binary: Tango's interval with no discordant pair (the Wilson bound for 0 of
    # 30 units) is wider than the pseudo-case interval and decides the union.
    bound = wilson(0, 30)[1]
    binary = paired_difference([1.0] * 30, [1.0] * 30, binary=True)
    assert (binary.low, binary.high, binary.p_value) == pytest.approx((-bound, bound, 1.0))
    # One case of 30 one trial worse is never a narrower interval than none at all (issue 11).
    worse = paired_difference([1.0] * 30, [0.875] + [1.0] * 29)
    assert worse.low <= result.low and worse.high >= result.high - 1 / 30


def test_constant_nonzero_difference_has_no_t_test():
    result = paired_difference([0.5] * 10, [0.625] * 10, seed=0)
    assert result.p_test is None and result.p_value == result.p_pseudocase
    assert result.method == "pseudocase"
    assert result.low < 0.125 < result.high


def test_intervals_stay_inside_minus_one_one():
    # Two units: t with one degree of freedom is ±6.3·SE; the mean difference still lies in [−1, 1].
    for base, cand in (([1.0, 1.0], [0.0, 1.0]), ([0.0, 0.0], [1.0, 0.5]), ([1.0, 0.0], [0.0, 1.0])):
        r = paired_difference(base, cand, confidence=0.9)
        assert -1.0 <= r.low <= r.delta <= r.high <= 1.0, r


def test_paired_difference_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="equal length"):
        paired_difference([1.0, 0.0], [1.0], seed=0)
    with pytest.raises(ValueError, match="finite"):
        paired_difference([1.0, np.nan], [1.0, 1.0], seed=0)
    with pytest.raises(ValueError, match="no case with a value in both"):
        paired_differences(np.array([[1.0, np.nan]]), np.array([[1.0, 1.0]]))
    with pytest.raises(ValueError, match="interval"):
        paired_difference([1.0, 0.0], [1.0, 1.0], interval="wald")  # type: ignore[arg-type]


def test_mcnemar_midp_reference_value():
    assert mcnemar_midp(3, 12) == pytest.approx(0.0213, abs=5e-5)
    assert mcnemar_midp(12, 3) == mcnemar_midp(3, 12)
    assert (
        mcnemar_midp(3, 12) < binomtest(3, 15, 0.5).pvalue
    )  # mid-p is less conservative than exact (0.0352)


def test_mcnemar_midp_edges():
    assert mcnemar_midp(0, 0) == 1.0
    assert mcnemar_midp(5, 5) == pytest.approx(1.0)
    assert mcnemar_midp(0, 1) == pytest.approx(0.5)  # 2 · (0.5 − 0.25)
    with pytest.raises(ValueError):
        mcnemar_midp(-1, 3)


def test_minimum_detectable_effect():
    assert minimum_detectable_effect(0.25, 100) == pytest.approx(0.070, abs=5e-4)
    assert minimum_detectable_effect(0.25, 197) == pytest.approx(0.05, abs=5e-4)  # δ = 5 pp needs ≈ 197 tasks
    assert minimum_detectable_effect(0.25, 100, two_sided=False) < minimum_detectable_effect(0.25, 100)
    with pytest.raises(ValueError):
        minimum_detectable_effect(0.25, 0)


def test_holm_hand_computed_example():
    # Sorted: .005·4 = .02, .01·3 = .03, .03·2 = .06, .04·1 = .04 → running max .02, .03, .06, .06.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one_and_handles_edges():
    assert holm([0.5, 0.6]) == [1.0, 1.0]
    assert holm([0.02]) == [0.02]
    assert holm([]) == []
    with pytest.raises(ValueError):
        holm([0.1, 1.2])
