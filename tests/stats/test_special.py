"""passhat's own ndtr, ndtri, betainc and betaincinv (passhat.stats._special) against scipy.special's values.

The summary uses its own four functions so that ``passhat run`` does not import scipy.special (0.24 s of
CPU); these tests hold them to scipy over the ranges the intervals use.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

from passhat.stats import _special


def relative(mine: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(mine - reference) / np.maximum(np.abs(reference), 1e-300)))


def test_ndtr_and_ndtri_agree_with_scipy() -> None:
    x = np.linspace(-37, 9, 4001)
    assert relative(_special.ndtr(x), sp.ndtr(x)) < 1e-12
    p = np.concatenate([np.logspace(-300, -1, 500), np.linspace(0.01, 0.99, 500), 1 - np.logspace(-16, -1, 100)])
    assert relative(_special.ndtri(p), sp.ndtri(p)) < 1e-14
    assert _special.ndtri(0.0) == -math.inf and _special.ndtri(1.0) == math.inf
    assert math.isnan(_special.ndtri(1.5)) and math.isnan(_special.ndtr(math.nan))


@pytest.mark.parametrize("top", [10, 1_000, 10_000])
def test_betainc_and_its_inverse_agree_with_scipy(top: int) -> None:
    rng = np.random.default_rng(top)
    a, b = rng.uniform(0.3, top, 600), rng.uniform(0.3, top, 600)
    y = np.concatenate([rng.uniform(0, 1, 300), rng.choice([0.005, 0.025, 0.05, 0.95, 0.975, 0.995], 300)])
    x = _special.betaincinv(a, b, y)
    assert relative(x, sp.betaincinv(a, b, y)) < 1e-10
    assert relative(_special.betainc(a, b, x), sp.betainc(a, b, x)) < 1e-9


def test_clopper_pearson_bounds_agree_with_scipy_at_every_count() -> None:
    """The integer arguments the exact interval uses: Beta(c, n - c + 1) and Beta(c + 1, n - c)."""
    for n in (1, 4, 20, 200, 2_000):
        c = np.arange(1, n + 1, dtype=float)
        for tail in (0.025, 0.05, 0.975):
            assert relative(_special.betaincinv(c, n - c + 1, tail), sp.betaincinv(c, n - c + 1, tail)) < 1e-11


def test_edges_and_shapes_are_those_of_the_ufuncs() -> None:
    assert _special.betaincinv(2.0, 3.0, 0.0) == 0.0 and _special.betaincinv(2.0, 3.0, 1.0) == 1.0
    assert _special.betainc(2.0, 3.0, 0.0) == 0.0 and _special.betainc(2.0, 3.0, 1.0) == 1.0
    assert math.isnan(_special.betaincinv(0.0, 3.0, 0.5)) and math.isnan(_special.betainc(2.0, math.nan, 0.5))
    assert _special.betaincinv(1.0, 1.0, 0.3) == pytest.approx(0.3, rel=1e-15)
    assert _special.betaincinv(1, 30, 0.05) == pytest.approx(1 - 0.95 ** (1 / 30), rel=1e-13)
    assert isinstance(_special.betaincinv(1, 30, 0.05), float)
    grid = _special.betaincinv(np.array([[1.0], [2.0]]), np.array([3.0, 4.0, 5.0]), 0.5)
    assert grid.shape == (2, 3) and np.allclose(grid, sp.betaincinv(np.array([[1.0], [2.0]]), np.array([3.0, 4.0, 5.0]), 0.5))

