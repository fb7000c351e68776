"""The within-case permutation test of "nothing changed" against exact enumeration on planned cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import hypergeom

from passhat.stats.passk import pass_hat_k
from passhat.stats.permutation import permutation_test


def exact_p(n_b: list[int], c_b: list[int], n_c: list[int], c_c: list[int], k: int) -> float:
    """Two-sided p by enumerating every candidate count of every case given its total passes."""
    observed = sum(pass_hat_k(b, y, k) - pass_hat_k(a, x, k) for a, x, b, y in zip(n_b, c_b, n_c, c_c, strict=True))
    supports = []
    for a, x, b, y in zip(n_b, c_b, n_c, c_c, strict=True):
        total = x + y
        support = range(max(0, total - a), min(b, total) + 1)
        supports.append([(pass_hat_k(b, s, k) - pass_hat_k(a, total - s, k), hypergeom.pmf(s, a + b, total, b))
                         for s in support])
    low = high = 0.0
    for combo in itertools.product(*supports):
        value, prob = sum(v for v, _ in combo), math.prod(q for _, q in combo)
        low += prob * (value <= observed + 1e-12)
        high += prob * (value >= observed - 1e-12)
    return min(1.0, 2 * min(low, high))


def test_one_case_breaking_completely() -> None:
    # 4/4 → 0/4: given 4 passes of 8, all four in the base run has probability 1/C(8, 4) = 1/70.
    r = permutation_test([4], [4], [4], [0], [("pass_hat_k", 1)], rng=np.random.default_rng(0), n_draws=40_000)
    assert r.p_value[0] == pytest.approx(2 / 70, abs=0.004)
    # d = (2c* − 4)/4 with c* ~ Hypergeom(8, 4, 4), Var c* = 4/7: the mean difference has SD √(1/7)
    assert r.null_sd[0] == pytest.approx(math.sqrt(1 / 7)) and r.informative[0] == 1


@pytest.mark.parametrize(("n_b", "c_b", "n_c", "c_c", "k"), [
    ([4, 4, 4], [4, 3, 2], [4, 4, 4], [1, 3, 0], 1),
    ([8, 8], [8, 6], [8, 8], [5, 2], 2),
    ([8, 6, 4], [7, 6, 1], [4, 6, 8], [1, 2, 6], 1),  # unequal trials: the null is not symmetric
])
def test_monte_carlo_p_matches_enumeration(n_b: list[int], c_b: list[int], n_c: list[int], c_c: list[int],
                                           k: int) -> None:
    r = permutation_test(n_b, c_b, n_c, c_c, [("pass_hat_k", k)], rng=np.random.default_rng(1), n_draws=40_000)
    assert r.p_value[0] == pytest.approx(exact_p(n_b, c_b, n_c, c_c, k), abs=0.01)


def test_cases_that_cannot_move_change_nothing() -> None:
    # A case passing (or failing) every trial of both runs has one outcome given its totals: adding 100 of
    # them moves neither the p-value nor how many cases are informative (the mean's SD shrinks by the count).
    base = ([4, 4, 4], [4, 3, 2], [4, 4, 4], [1, 3, 0])
    alone = permutation_test(*base, [("pass_hat_k", 1)], rng=np.random.default_rng(2))
    padded = permutation_test(*(x + [4] * 50 for x in base), [("pass_hat_k", 1)], rng=np.random.default_rng(2))
    assert padded.p_value[0] == alone.p_value[0] and padded.informative[0] == alone.informative[0] == 3
    assert padded.null_sd[0] == pytest.approx(alone.null_sd[0] * 3 / 53)


def test_nothing_that_can_move_is_p_one_and_k_above_the_trials_excludes_a_case() -> None:
    r = permutation_test([4, 4], [4, 0], [4, 4], [4, 0], [("pass_hat_k", 1), ("pass_at_k", 2)],
                         rng=np.random.default_rng(3))
    assert list(r.p_value) == [1.0, 1.0] and list(r.informative) == [0, 0]
    r = permutation_test([2, 4], [2, 4], [2, 4], [0, 4], [("pass_hat_k", 3)], rng=np.random.default_rng(3))
    assert r.p_value[0] == 1.0  # the case that broke has 2 trials: no pass^3 to compare
    with pytest.raises(ValueError, match="passes <= trials"):
        permutation_test([4], [5], [4], [0], [("pass_hat_k", 1)], rng=np.random.default_rng(3))
