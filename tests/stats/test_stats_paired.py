import numpy as np
import pytest
from scipy.stats import binomtest, ttest_rel

from passhat.stats import holm, mcnemar_midp, minimum_detectable_effect, paired_difference, wilson


def _versions(seed=0, cases=40):
    rng = np.random.default_rng(seed)
    skill = rng.beta(3, 1.5, cases)
    base = rng.binomial(8, skill) / 8
    cand = rng.binomial(8, np.clip(skill + 0.08, 0, 1)) / 8
    return base, cand


def test_paired_difference_reports_delta_interval_test_and_correlation():
    base, cand = _versions()
    result = paired_difference(base, cand, seed=1)
    d = cand - base
    assert result.delta == pytest.approx(d.mean())
    assert result.method == "bca"
    assert result.low < result.delta < result.high
    assert result.p_value == pytest.approx(ttest_rel(cand, base).pvalue)
    assert result.correlation == pytest.approx(np.corrcoef(base, cand)[0, 1])
    assert result.sd_diff == pytest.approx(d.std(ddof=1))
    assert (result.n_cases, result.n_units) == (40, 40)
    assert result == paired_difference(base, cand, seed=1)


def test_singleton_groups_reproduce_ttest_rel():
    base, cand = _versions(seed=3)
    grouped = paired_difference(base, cand, [str(i) for i in range(40)], seed=1)
    assert grouped.p_value == pytest.approx(ttest_rel(cand, base).pvalue, rel=1e-10)


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


def test_identical_versions_give_p_one_and_a_rule_of_three_interval():
    result = paired_difference([1.0] * 30, [1.0] * 30, seed=0)
    assert result.p_value == 1.0
    assert result.method == "wilson_no_difference"
    bound = wilson(0, 30)[1]
    assert (result.low, result.high) == pytest.approx((-bound, bound))
    assert result.correlation is None


def test_constant_nonzero_difference_has_no_t_test():
    result = paired_difference([0.5] * 10, [0.625] * 10, seed=0)
    assert result.p_value is None
    assert result.method == "wilson_bounded"
    assert result.low < 0.125 < result.high


def test_paired_difference_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="equal length"):
        paired_difference([1.0, 0.0], [1.0], seed=0)
    with pytest.raises(ValueError, match="finite"):
        paired_difference([1.0, np.nan], [1.0, 1.0], seed=0)


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
