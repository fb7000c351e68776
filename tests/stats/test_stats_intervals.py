import math

import numpy as np
import pytest
from scipy.stats import binomtest

from passhat.stats import clopper_pearson, clopper_pearson_lower, wilson, wilson_score


def test_wilson_seed_example():
    low, high = wilson(24, 30)
    assert (round(low, 3), round(high, 3)) == (0.627, 0.905)


def test_wilson_all_pass_is_not_degenerate():
    low, high = wilson(30, 30)
    assert low == pytest.approx(0.886, abs=5e-4)
    assert high == 1.0


def test_wilson_closed_form_matches_scipy_binomtest():
    for n in (1, 2, 7, 30, 200):
        for x in range(n + 1):
            for confidence in (0.8, 0.9, 0.95):
                ci = binomtest(x, n).proportion_ci(confidence_level=confidence, method="wilson")
                assert wilson(x, n, confidence) == pytest.approx((ci.low, ci.high), abs=1e-12)
                assert wilson_score(x / n, n, confidence) == wilson(x, n, confidence)


def test_never_fails_claim_one_sided_clopper_pearson():
    # 0 failures in 30: exact 95% upper bound on the failure rate is 1 − 0.05^(1/30) ≈ 0.095.
    low, high = clopper_pearson(0, 30, alternative="less")
    assert low == 0.0
    assert high == pytest.approx(1 - 0.05 ** (1 / 30), abs=1e-12)
    low, high = clopper_pearson(30, 30, alternative="greater")
    assert low == pytest.approx(0.05 ** (1 / 30), abs=1e-12)
    assert high == 1.0


def test_clopper_pearson_two_sided_matches_binomtest():
    ci = binomtest(7, 20).proportion_ci(method="exact")
    assert clopper_pearson(7, 20) == pytest.approx((ci.low, ci.high))
    # CP guarantees coverage and is wider than Wilson in the tails.
    assert clopper_pearson(0, 30)[1] > wilson(0, 30)[1]


def test_clopper_pearson_equals_binomtest_everywhere():
    """The beta quantiles clopper_pearson computes itself (no scipy.stats import) are binomtest's, for every
    count, each alternative and several confidences."""
    for n, counts in ((1, range(2)), (2, range(3)), (7, range(8)), (30, range(31)), (200, (0, 1, 57, 199, 200))):
        for x in counts:
            for alternative in ("two-sided", "greater", "less"):
                for confidence in (0.8, 0.95, 0.99):
                    ci = binomtest(x, n, alternative=alternative).proportion_ci(confidence_level=confidence,
                                                                              method="exact")
                    assert clopper_pearson(x, n, confidence, alternative) == pytest.approx((ci.low, ci.high),
                                                                                           rel=1e-9, abs=1e-12)


def test_no_trials_means_no_information():
    assert wilson(0, 0) == (0.0, 1.0)
    assert clopper_pearson(0, 0, alternative="greater") == (0.0, 1.0)
    assert wilson_score(0.0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("x", "n", "confidence"), [(-1, 5, 0.95), (6, 5, 0.95), (2, 5, 1.0), (2, 5, 0.0)])
def test_invalid_inputs_raise(x, n, confidence):
    with pytest.raises(ValueError):
        wilson(x, n, confidence)
    with pytest.raises(ValueError):
        clopper_pearson(x, n, confidence)


def test_invalid_alternative_raises():
    with pytest.raises(ValueError):
        clopper_pearson(3, 5, alternative="upper")  # type: ignore[arg-type]


def test_wilson_score_takes_an_effective_sample_size():
    # Kish's n_eff for a share over clusters is fractional; the formula is the same with z = 1.96.
    z = 1.959963984540054
    n, p = 400 / 110, 0.5
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson_score(p, n) == pytest.approx(((centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)))
    assert wilson_score(0.4, 10.0) == wilson_score(0.4, 10)
    for bad in (-1.0, True, float("nan")):
        with pytest.raises(ValueError):
            wilson_score(0.5, bad)


def test_vectorised_clopper_pearson_lower_bound_equals_binomtest():
    n = np.array([n for n in (1, 2, 8, 16, 30, 200) for _ in range(n + 1)])
    c = np.array([x for n in (1, 2, 8, 16, 30, 200) for x in range(n + 1)])
    for confidence in (0.9, 0.95):
        expected = [clopper_pearson(int(x), int(m), confidence, "greater")[0] for x, m in zip(c, n, strict=True)]
        assert clopper_pearson_lower(c, n, confidence) == pytest.approx(expected, abs=1e-12)
    assert clopper_pearson_lower(np.array([8]), np.array([8]), 0.95)[0] == pytest.approx(0.05 ** (1 / 8))
