import numpy as np
import pytest

from passhat.stats import Distribution, percentile


def test_percentile_uses_linear_interpolation():
    values = [1.0, 2.0, 3.0, 4.0, 100.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 95) == pytest.approx(4 + 0.8 * 96)
    assert percentile(values, 95) == np.percentile(values, 95)
    assert percentile([], 95) is None
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_distribution_summary():
    summary = Distribution.of([0.2, 0.4, 0.4, 1.0])
    assert summary == Distribution(n=4, mean=0.5, p50=0.4, p95=pytest.approx(0.91), min=0.2, max=1.0)
    assert Distribution.of([]) is None
    with pytest.raises(ValueError, match="NaN"):
        Distribution.of([1.0, float("nan")])


def test_short_samples_are_summarised_exactly_as_numpy_does():
    # One case's trials take a pure-Python path (np.percentile costs ≈ 70 µs a call); it must agree bit for bit.
    rng = np.random.default_rng(0)
    for n in range(1, 70):
        values = rng.exponential(2.0, n).tolist()
        d = Distribution.of(values)
        p50, p95 = np.percentile(values, [50, 95])
        assert (d.n, d.p50, d.p95, d.min, d.max) == (n, p50, p95, min(values), max(values))
        assert d.mean == pytest.approx(np.mean(values), rel=1e-12)
    with pytest.raises(ValueError, match="NaN"):
        Distribution.of([1.0, float("nan")])


def test_long_samples_are_summarised_exactly_as_numpy_does():
    # Sorted by numpy and interpolated in Python (np.percentile imports numpy.ma on its first call): bit for bit.
    rng = np.random.default_rng(1)
    for n in (65, 100, 257, 1024, 4099):
        for values in (rng.exponential(2.0, n).tolist(), rng.integers(0, 5, n).astype(float).tolist()):
            d = Distribution.of(values)
            p50, p95 = np.percentile(values, [50, 95])
            assert (d.n, d.mean, d.p50, d.p95, d.min, d.max) == (n, np.mean(values), p50, p95, min(values), max(values))
