import warnings

import numpy as np
import pytest
from scipy.stats import bootstrap

from passhat.stats import estimate_matrix
from passhat.stats._resample import bca_ratio, cluster_se, resampling_units, unit_totals


def _ratio(sums, counts, axis=-1):
    return sums.sum(axis=axis) / counts.sum(axis=axis)


@pytest.mark.parametrize("grouped", [False, True])
def test_engine_agrees_with_scipy_bootstrap_bca(grouped):
    """The BCa formulas of scipy.stats.bootstrap(paired=True, method="BCa"); resamples drawn by unit type.

    The draws differ (multinomial counts per distinct unit instead of U uniform indices, the same
    distribution), so the bounds agree up to Monte Carlo error: at 20,000 resamples about ±0.003.
    """
    rng = np.random.default_rng(11)
    values = np.round(rng.random(45) * 8) / 8  # per-case values with ties, as pass^k values have
    groups = [f"family{i % 14}" for i in range(45)] if grouped else None
    sums, counts = unit_totals(values.reshape(-1, 1), resampling_units(groups, 45))
    theta, low, high, _ = bca_ratio(
        sums, counts, rng=np.random.default_rng(3), confidence=0.9, n_resamples=20_000
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ref = bootstrap(
            (sums[:, 0], counts[:, 0]),
            _ratio,
            paired=True,
            n_resamples=20_000,
            confidence_level=0.9,
            method="BCa",
            rng=np.random.default_rng(3),
        )
    assert theta[0] == pytest.approx(values.mean())
    assert low[0] == pytest.approx(ref.confidence_interval.low, abs=0.006)
    assert high[0] == pytest.approx(ref.confidence_interval.high, abs=0.006)


def test_resampling_by_unit_type_has_the_bootstrap_distribution():
    # 10,000 cases with 17 distinct values: the resampled mean has mean x̄ and variance σ²/U (plug-in σ²).
    rng = np.random.default_rng(5)
    values = rng.binomial(16, rng.beta(4, 1.5, 10_000)) / 16
    sums, counts = unit_totals(values.reshape(-1, 1), resampling_units(None, 10_000))
    _, _, _, dist = bca_ratio(sums, counts, rng=np.random.default_rng(6), confidence=0.95, n_resamples=4000)
    assert dist[:, 0].mean() == pytest.approx(values.mean(), abs=4 * values.std() / 100 / np.sqrt(4000))
    assert dist[:, 0].var() == pytest.approx(values.var() / 10_000, rel=0.08)


def test_batch_size_does_not_change_the_result():
    values = np.random.default_rng(2).random((60, 3))
    sums, counts = unit_totals(values, resampling_units(None, 60))
    runs = [
        bca_ratio(sums, counts, rng=np.random.default_rng(9), confidence=0.95, n_resamples=500, batch=b)
        for b in (None, 7, 500)
    ]
    for other in runs[1:]:
        for a, b in zip(runs[0], other, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_all_columns_share_resamples_so_curves_stay_coherent():
    rng = np.random.default_rng(4)
    counts_nc = [(8, int(c)) for c in rng.binomial(8, rng.beta(4, 1.5, 40))]
    ks = list(range(1, 9))
    hat = estimate_matrix(counts_nc, ks, "pass_hat_k")
    at = estimate_matrix(counts_nc, ks, "pass_at_k")
    sums, counts = unit_totals(np.hstack([hat, at]), resampling_units(None, 40))
    _, _, _, dist = bca_ratio(sums, counts, rng=rng, confidence=0.95, n_resamples=400)
    assert np.all(np.diff(dist[:, :8], axis=1) <= 1e-12)  # pass^k non-increasing in k, every resample
    assert np.all(np.diff(dist[:, 8:], axis=1) >= -1e-12)  # pass@k non-decreasing
    np.testing.assert_allclose(dist[:, 0], dist[:, 8])  # pass^1 == pass@1 in every resample


def test_resampling_units():
    units = resampling_units(["a", None, "b", "a", None, "b"], 6)
    assert units.tolist() == [0, 1, 2, 0, 3, 2]
    assert resampling_units(None, 3).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="groups has 2 entries"):
        resampling_units(["a", "b"], 3)


def test_unit_totals_skip_missing_cells():
    values = np.array([[1.0, np.nan], [0.5, 0.25], [0.0, 1.0]])
    sums, counts = unit_totals(values, np.array([0, 0, 1]))
    assert sums.tolist() == [[1.5, 0.25], [0.0, 1.0]]
    assert counts.tolist() == [[2.0, 1.0], [1.0, 1.0]]


def test_cluster_se_without_groups_is_the_standard_error():
    values = np.random.default_rng(8).random(25)
    sums, counts = unit_totals(values.reshape(-1, 1), resampling_units(None, 25))
    assert cluster_se(sums, counts)[0] == pytest.approx(values.std(ddof=1) / 5)
