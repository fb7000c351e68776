"""Gaffke's bounds as computed (stats/gaffke.py: only what is needed, deduplicated, in pieces) against the
direct computation they replace: every column drawn, ``np.unique`` for the types, ``np.quantile``."""

import numpy as np
import pytest

from passhat.stats import estimate_matrix
from passhat.stats._resample import resampling_units, unit_totals
from passhat.stats._special import betaincinv
from passhat.stats.gaffke import _quantile_rows, _types, gaffke_bounds


def direct_bounds(sums: np.ndarray, counts: np.ndarray, confidence: float, *, seed: int, n_draws: int,
                  batch: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bounds as the module's docstring defines them, every column drawn (the code before design 032)."""
    rng = np.random.default_rng(seed)
    tail = (1 - confidence) / 2
    n_units = (counts > 0).sum(axis=0)
    total_s, total_n = sums.sum(axis=0), counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        size = np.where(n_units > 0, total_n / np.maximum(n_units, 1), 0.0)
        _, first, multiplicity = np.unique(np.hstack([sums, counts]), axis=0, return_index=True, return_counts=True)
        step = batch or max(1, min(n_draws, 4_000_000 // (len(first) + 1)))
        lower, upper = np.empty((n_draws, sums.shape[1])), np.empty((n_draws, sums.shape[1]))
        for start in range(0, n_draws, step):
            m = min(step, n_draws - start)
            weights = rng.standard_gamma(multiplicity.astype(float), size=(m, len(first)))
            pseudo = rng.standard_exponential((m, 1)) * size
            num, den = weights @ sums[first], weights @ counts[first] + pseudo
            lower[start:start + m], upper[start:start + m] = num / den, (num + pseudo) / den
        low, high = np.quantile(lower, tail, axis=0), np.quantile(upper, 1 - tail, axis=0)
        exact = np.all(counts <= 1, axis=0) & np.all((sums == 0) | (sums == counts), axis=0) & (n_units > 0)
        s, f = total_s, total_n - total_s
        cp_low = np.where(s > 0, betaincinv(np.maximum(s, 1), f + 1, tail), 0.0)
        cp_high = np.where(f > 0, betaincinv(s + 1, np.maximum(f, 1), 1 - tail), 1.0)
    low, high = np.where(exact, cp_low, low), np.where(exact, cp_high, high)
    high, low = np.where(total_s >= total_n, 1.0, high), np.where(total_s <= 0, 0.0, low)
    empty = n_units == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high), exact


def totals(rng: np.random.Generator, cases: int, trials: int, *, all_or_none: bool, uneven: bool,
           grouped: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-unit totals of a pass^k | pass@k matrix like the summary's (k = 1..trials)."""
    p = rng.beta(2, 1, cases)
    if all_or_none:
        p = (p > 0.5).astype(float)
    n = rng.integers(max(1, trials // 2), trials + 1, cases) if uneven else np.full(cases, trials)
    pairs = [(int(a), int(b)) for a, b in zip(n, rng.binomial(n, p), strict=True)]
    ks = list(range(1, trials + 1))
    matrix = np.hstack([estimate_matrix(pairs, ks, "pass_hat_k"), estimate_matrix(pairs, ks, "pass_at_k")])
    groups = [f"g{i % max(1, cases // 3)}" if i % 4 else None for i in range(cases)] if grouped else None
    return unit_totals(matrix, resampling_units(groups, cases))


@pytest.mark.parametrize("cases, trials, n_draws, batch", [
    (1, 4, 4000, None), (3, 8, 4000, None), (16, 16, 1000, None), (12, 8, 400, 37), (40, 4, 1000, None),
    (200, 4, 200, None), (5, 2, 3, None), (7, 8, 1, None),
])
def test_bounds_are_the_direct_computations(cases, trials, n_draws, batch):
    rng = np.random.default_rng(cases * 1000 + trials)
    for all_or_none in (False, True):
        for uneven, grouped in ((False, False), (True, False), (False, True), (True, True)):
            sums, counts = totals(rng, cases, trials, all_or_none=all_or_none, uneven=uneven, grouped=grouped)
            for confidence in (0.95, 0.8):
                got = gaffke_bounds(sums, counts, confidence, rng=np.random.default_rng(7), n_draws=n_draws,
                                    batch=batch)
                low, high, exact = direct_bounds(sums, counts, confidence, seed=7, n_draws=n_draws, batch=batch)
                assert (got.exact == exact).all()
                # the same draws and the same arithmetic per value: only the matrix product's rounding differs
                np.testing.assert_allclose(got.low, low, rtol=0, atol=1e-14)
                np.testing.assert_allclose(got.high, high, rtol=0, atol=1e-14)


def test_nothing_is_drawn_when_no_bound_needs_draws():
    # 0/1 values of single cases are Clopper–Pearson; an all-pass column's upper end is 1 and an all-fail
    # column's lower end 0: the generator is left as it was (its next draws are the ones a caller expects).
    ones_and_zeros = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    rng = np.random.default_rng(3)
    bounds = gaffke_bounds(ones_and_zeros, np.ones_like(ones_and_zeros), 0.95, rng=rng, n_draws=4000)
    assert bounds.exact.all() and rng.random() == np.random.default_rng(3).random()
    assert (bounds.high[1], bounds.low[2]) == (1.0, 0.0)
    # a group of two that both pass is not single-case: its lower bound is drawn, its upper one is not
    grouped = gaffke_bounds(np.array([[2.0], [1.0]]), np.array([[2.0], [1.0]]), 0.95, rng=rng, n_draws=4000)
    assert 0 < grouped.low[0] < 1 and grouped.high[0] == 1.0 and not grouped.exact[0]


def test_quantile_rows_is_numpys_quantile_bit_for_bit():
    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 41, 400, 4001):
        values = rng.random((4, n))
        values[1] = np.round(values[1], 1)  # ties
        values[2, n // 2] = np.nan  # numpy's quantile of a row with NaN is NaN
        for q in (0.0, 0.005, 0.025, 0.3, 0.5, 0.975, 0.995, 1.0):
            expected = np.quantile(values, q, axis=1)
            got = _quantile_rows(values, q)
            assert ((got == expected) | (np.isnan(got) & np.isnan(expected))).all(), (n, q)


def test_types_are_numpys_unique_rows_in_its_order():
    # the order of the types is the order of the Gamma draws: it must be np.unique's
    rng = np.random.default_rng(5)
    for units, width in ((1, 1), (7, 3), (300, 8), (50, 40)):
        rows = rng.integers(0, 3, (units, width)) / rng.choice([1.0, 2.0, 3.0])
        first, multiplicity = _types(rows)
        _, want_first, want_multiplicity = np.unique(rows, axis=0, return_index=True, return_counts=True)
        assert first.tolist() == want_first.tolist() and multiplicity.tolist() == want_multiplicity.tolist()
