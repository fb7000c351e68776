"""Coherent curves (issue 22): bounds monotone in k as the truth is, and every interval holding its estimate."""

from __future__ import annotations

import numpy as np
import pytest

from passhat.stats import Interval, coherent_curve, estimate_matrix, suite_intervals


def _iv(estimate: float, low: float, high: float) -> Interval:
    return Interval(estimate, low, high, "bca_pseudocase", 0.95, 10, 10)


def test_pass_hat_k_bounds_become_non_increasing_and_only_widen() -> None:
    curve = [_iv(0.8, 0.6, 0.9), _iv(0.7, 0.65, 0.8), _iv(0.6, 0.4, 0.85)]
    out = coherent_curve(curve, "non_increasing")
    assert [iv.low for iv in out] == [0.6, 0.6, 0.4]  # running min from k = 1
    assert [iv.high for iv in out] == [0.9, 0.85, 0.85]  # running max from the largest k
    assert all(o.low <= c.low and o.high >= c.high for o, c in zip(out, curve, strict=True))
    assert [iv.estimate for iv in out] == [0.8, 0.7, 0.6]


def test_pass_at_k_bounds_become_non_decreasing() -> None:
    out = coherent_curve([_iv(0.5, 0.4, 0.7), _iv(0.6, 0.35, 0.65)], "non_decreasing")
    assert [iv.low for iv in out] == [0.35, 0.35]
    assert [iv.high for iv in out] == [0.7, 0.7]


def test_an_interval_that_excluded_its_estimate_is_widened_to_hold_it() -> None:
    out = coherent_curve([_iv(0.9, 0.92, 0.97), _iv(0.5, 0.1, 0.45)], "non_increasing")
    assert (out[0].low, out[0].high) == (0.9, 0.97)
    assert (out[1].low, out[1].high) == (0.1, 0.5)


@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_few_families_give_a_monotone_curve_containing_every_estimate(n_groups: int) -> None:
    rng = np.random.default_rng(7)
    counts = [(8, int(c)) for c in rng.integers(3, 9, size=3 * n_groups)]
    groups = [f"family-{i % n_groups}" for i in range(len(counts))]
    ks = list(range(1, 9))
    curve = coherent_curve(suite_intervals(estimate_matrix(counts, ks, "pass_hat_k"), groups, seed=1, n_resamples=400),
                           "non_increasing")
    lows, highs = np.array([iv.low for iv in curve]), np.array([iv.high for iv in curve])
    assert (np.diff(lows) <= 0).all() and (np.diff(highs) <= 0).all()
    assert all(iv.low <= iv.estimate <= iv.high for iv in curve)
