import math
from fractions import Fraction

import pytest
from scipy.stats import binom, hypergeom

from passhat.stats import (
    curve,
    estimate,
    estimate_matrix,
    fixed_suite_se,
    pass_at_k,
    pass_hat_k,
    unbiased_variance_pass_at_k,
    unbiased_variance_pass_hat_k,
)


def test_exact_small_values():
    assert pass_hat_k(8, 6, 4) == 15 / 70
    assert pass_at_k(8, 2, 4) == 1 - math.comb(6, 4) / math.comb(8, 4)
    assert pass_hat_k(8, 3, 4) == 0.0  # fewer successes than k
    assert pass_at_k(8, 5, 4) == 1.0  # fewer failures than k


def test_k1_is_the_pass_rate():
    for c in range(11):
        assert pass_hat_k(10, c, 1) == pass_at_k(10, c, 1) == c / 10


def test_matches_hypergeometric_form():
    # statistics.md §1.2: X ~ Hypergeom(n, c, k); pass^k = P(X = k), pass@k = P(X >= 1).
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_hat_k(n, c, k) == pytest.approx(hypergeom.pmf(k, n, c, k), abs=1e-12)
                assert pass_at_k(n, c, k) == pytest.approx(hypergeom.sf(0, n, c, k), abs=1e-12)


@pytest.mark.parametrize(
    ("n", "c", "k"), [(2000, 1000, 1000), (2000, 1999, 1000), (2000, 1, 1000), (2000, 1700, 37)]
)
def test_large_n_is_finite_and_exact(n, c, k):
    hat = pass_hat_k(n, c, k)
    at = pass_at_k(n, c, k)
    assert math.isfinite(hat) and math.isfinite(at)
    assert hat == float(Fraction(math.comb(c, k), math.comb(n, k)))
    assert at == float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def test_small_pass_at_k_keeps_relative_precision():
    # 1 − C(n−c,k)/C(n,k) is tiny here; float subtraction would keep only a few digits.
    exact = 1 - Fraction(math.comb(1999, 1), math.comb(2000, 1))
    assert pass_at_k(2000, 1, 1) == float(exact) == 1 / 2000


@pytest.mark.parametrize(("n", "c", "k"), [(8, 6, 0), (8, -1, 2), (8, 9, 2), (3, 2, 4), (0, 0, 1)])
def test_invalid_inputs_raise(n, c, k):
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_n_below_k_message_tells_caller_to_exclude():
    with pytest.raises(ValueError, match="exclude this task"):
        pass_hat_k(3, 3, 4)


def _enumerate(n, k, p, estimator, variance):
    pmf = [binom.pmf(c, n, p) for c in range(n + 1)]
    mean = sum(w * estimator(n, c, k) for c, w in enumerate(pmf))
    true_var = sum(w * (estimator(n, c, k) - mean) ** 2 for c, w in enumerate(pmf))
    mean_vhat = sum(w * variance(n, c, k) for c, w in enumerate(pmf))
    return mean, true_var, mean_vhat


def test_unbiased_variance_pass_hat_k_by_enumeration():
    mean, true_var, mean_vhat = _enumerate(8, 4, 0.9, pass_hat_k, unbiased_variance_pass_hat_k)
    assert mean == pytest.approx(0.9**4, abs=1e-12)  # the estimator itself is unbiased
    assert true_var == pytest.approx(0.102662, abs=1e-6)
    assert mean_vhat == pytest.approx(true_var, abs=1e-6)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.7])
def test_unbiased_variance_pass_at_k_by_enumeration(p):
    mean, true_var, mean_vhat = _enumerate(10, 3, p, pass_at_k, unbiased_variance_pass_at_k)
    assert mean == pytest.approx(1 - (1 - p) ** 3, abs=1e-12)
    assert mean_vhat == pytest.approx(true_var, abs=1e-9)


def test_variance_needs_two_k_trials():
    assert unbiased_variance_pass_hat_k(7, 5, 4) is None
    assert unbiased_variance_pass_at_k(7, 5, 4) is None
    assert unbiased_variance_pass_hat_k(8, 8, 4) == 0.0  # all pass: no trial noise visible
    # k = 1: p̂(1 − p̂)/(n − 1), the familiar unbiased variance of a sample proportion.
    assert unbiased_variance_pass_hat_k(10, 3, 1) == pytest.approx(0.3 * 0.7 / 9)


def test_curve_is_monotone_and_complete():
    hat = curve(8, 6, "pass_hat_k")
    at = curve(8, 6, "pass_at_k")
    assert len(hat) == len(at) == 8
    assert hat[0] == at[0] == 6 / 8
    assert all(a >= b for a, b in zip(hat, hat[1:], strict=False))
    assert all(a <= b for a, b in zip(at, at[1:], strict=False))
    assert hat[-1] == 0.0 and at[-1] == 1.0
    assert curve(0, 0, "pass_hat_k") == []
    with pytest.raises(ValueError):
        curve(8, 6, "pass_k")  # type: ignore[arg-type]


def test_estimate_matrix_marks_short_tasks_missing():
    m = estimate_matrix([(4, 3), (2, 2)], [1, 2, 3], "pass_hat_k")
    assert m[0].tolist() == [estimate(4, 3, k, "pass_hat_k") for k in (1, 2, 3)]
    assert m[1, :2].tolist() == [1.0, 1.0]
    assert math.isnan(m[1, 2])


def test_fixed_suite_se():
    assert fixed_suite_se([0.04, 0.09, 0.0, 0.03]) == pytest.approx(math.sqrt(0.16) / 4)
    assert fixed_suite_se([0.04, None]) is None
    assert fixed_suite_se([]) is None
    with pytest.raises(ValueError):
        fixed_suite_se([-0.1])
