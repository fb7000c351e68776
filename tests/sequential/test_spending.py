"""α spending and group-sequential boundaries against published values (rpact's own unit tests)."""

from __future__ import annotations

import math

import pytest

from passhat.errors import PasshatError
from passhat.models.manifest import SequentialDesign
from passhat.sequential.design import Sequential, information
from passhat.sequential.spending import nominal_levels, spent, upper_boundaries


def increments(cumulative: list[float]) -> list[float]:
    return [cumulative[0], *(b - a for a, b in zip(cumulative, cumulative[1:], strict=False))]


def test_the_spending_functions_are_lan_and_demets_own() -> None:
    # O'Brien–Fleming type 2 − 2Φ(z_{1−α/2}/√τ), Pocock type α·ln(1 + (e − 1)τ): both α at τ = 1, 0 at 0.
    for kind in ("obrien_fleming", "pocock"):
        assert spent(kind, 0.05, 1.0) == pytest.approx(0.05, abs=1e-15)
        assert spent(kind, 0.05, 0.0) == 0.0
    assert spent("pocock", 0.05, 0.5) == pytest.approx(0.05 * math.log((1 + math.e) / 2), rel=1e-15)
    assert spent("obrien_fleming", 0.05, 0.25) == pytest.approx(2 * (1 - 0.5 * (1 + math.erf(
        1.959963984540054 / 0.5 / math.sqrt(2)))), rel=1e-9)
    # rpact, getDesignGroupSequential(kMax = 3, alpha = 0.03, typeOfDesign = "asOF"): alphaSpent
    assert [spent("obrien_fleming", 0.03, t) for t in (1 / 3, 2 / 3)] == pytest.approx(
        [0.00017079385, 0.0078650906], rel=1e-7)
    with pytest.raises(ValueError, match="spending must be"):
        spent("haybittle", 0.05, 0.5)  # type: ignore[arg-type]


def test_hwang_shih_decani_spending_against_hand_computed_values() -> None:
    # α(1 − e^{−γτ})/(1 − e^{−γ}); at τ = 1/2 the quotient is 1/(1 + e^{−γ/2}): γ = −4 → α/(1 + e²),
    # γ = 1 → α/(1 + e^{−1/2}); γ = 0 is the limit ατ.
    hsd = "hwang_shih_decani"
    assert spent(hsd, 0.05, 0.5, -4.0) == pytest.approx(0.05 / (1 + math.e**2), rel=1e-14)
    assert spent(hsd, 0.05, 0.5, 1.0) == pytest.approx(0.05 / (1 + math.exp(-0.5)), rel=1e-14)
    assert spent(hsd, 0.05, 0.25, 0.0) == 0.0125
    # γ = −2 at τ = 1/4: (1 − e^{1/2})/(1 − e²) = 0.6487212707/6.3890560989 = 0.1015363...
    assert spent(hsd, 0.05, 0.25, -2.0) == pytest.approx(0.05 * 0.64872127070013 / 6.38905609893065, rel=1e-12)
    for gamma in (-4.0, -1.0, 0.0, 1.0):
        assert spent(hsd, 0.05, 1.0, gamma) == pytest.approx(0.05, rel=1e-14)
        assert spent(hsd, 0.05, 0.0, gamma) == 0.0
    # between O'Brien–Fleming and Pocock at every look of 4/8/16, and increasing in γ
    for tau in (0.25, 0.5):
        ladder = [spent("obrien_fleming", 0.05, tau), *(spent(hsd, 0.05, tau, g) for g in (-4.0, -2.0, -1.0, 0.0)),
                  spent("pocock", 0.05, tau)]
        assert ladder == sorted(ladder)
    with pytest.raises(ValueError, match="gamma is the parameter of hwang_shih_decani"):
        spent(hsd, 0.05, 0.5)
    with pytest.raises(ValueError, match="gamma is the parameter of hwang_shih_decani"):
        spent("obrien_fleming", 0.05, 0.5, -4.0)
    with pytest.raises(ValueError, match="gamma must be finite"):
        spent(hsd, 0.05, 0.5, math.nan)


@pytest.mark.parametrize(("spend", "information_rates", "published"), [
    # rpact, asOF kMax = 3, alpha = 0.03 (equally spaced)
    (increments([spent("obrien_fleming", 0.03, t) for t in (1 / 3, 2 / 3, 1)]), [1 / 3, 2 / 3, 1],
     [3.5815302, 2.417863, 1.9175839]),
    # rpact, asUser userAlphaSpending = c(0.01, 0.02, 0.03, 0.05) (kMax = 4, equally spaced)
    ([0.01, 0.01, 0.01, 0.02], [0.25, 0.5, 0.75, 1], [2.3263479, 2.2192994, 2.1201347, 1.8189562]),
    # rpact, asHSD gammaA = 0 (linear spending), informationRates = c(0.2, 0.4, 1), alpha = 0.03
    ([0.006, 0.006, 0.018], [0.2, 0.4, 1], [2.5121443, 2.4228747, 2.0280392]),
    # rpact, asKD gammaA = 2.2 (α·t^2.2), informationRates = c(0.3, 0.7, 1), alpha = 0.03
    (increments([0.03 * t**2.2 for t in (0.3, 0.7, 1)]), [0.3, 0.7, 1], [2.8594012, 2.2435708, 1.9735737]),
])
def test_boundaries_match_published_designs(spend: list[float], information_rates: list[float],
                                            published: list[float]) -> None:
    assert upper_boundaries(spend, information_rates) == pytest.approx(published, abs=2e-7)


def test_a_look_that_spends_nothing_cannot_cross_and_bad_designs_are_refused() -> None:
    bounds = upper_boundaries([0.0, 0.025], [0.5, 1.0])
    assert bounds[0] == math.inf and nominal_levels(bounds) == [0.0, pytest.approx(0.025, rel=1e-9)]
    with pytest.raises(ValueError, match="strictly increasing"):
        upper_boundaries([0.01, 0.01], [1.0, 1.0])
    with pytest.raises(ValueError, match="one increment and one information level"):
        upper_boundaries([0.01], [1.0, 2.0])


def test_estimated_correlation_between_looks_gives_back_most_of_alpha_at_the_last_look() -> None:
    design = Sequential((4, 8, 16), "pocock")
    independent = design.levels(0.05, [0, 1, 2])  # correlation of independent trials: √(n_i/n_k)
    correlated = design.levels(0.05, [0, 1, 2], [0.0100, 0.0095, 0.0090])  # looks nearly as informative
    assert independent[0] == correlated[0] == pytest.approx(spent("pocock", 0.05, 0.25), rel=1e-12)
    assert independent[2] < 0.03 < 0.045 < correlated[2] < 0.05
    # The default, O'Brien–Fleming type: a quarter of the trials spends almost nothing, the last look nearly α.
    default = Sequential((4, 8, 16)).levels(0.05, [0, 1, 2], [0.0100, 0.0095, 0.0090])
    assert default[0] == pytest.approx(spent("obrien_fleming", 0.05, 0.25), rel=1e-12)
    assert default[0] < 1e-4 and 0.049 < default[2] <= 0.05
    # Rounded up on a grid and kept a step apart: the correlation is rounded down (conservative).
    assert information([4, 8, 16], [0.01, 0.0095, 0.0096]) == (1.0, 1.06, 1.07)
    assert information([4, 8, 16], [0.0, 0.01, 0.01]) == (1.0, 2.0, 4.0)


def test_looks_are_parsed_and_checked() -> None:
    assert Sequential.parse("4,8,16", None).looks == (4, 8, 16)
    assert Sequential.parse(None, None).looks == (4, 8, 16)
    assert Sequential.parse(None, 12).looks == (3, 6, 12)
    assert Sequential.parse("2,4", 10).looks == (2, 4, 10)
    for looks, top, message in (("8,4", None, "must increase"), ("4", None, "at least two looks"),
                                ("4,x", None, "trials per case separated by commas"),
                                ("4,8,16", 12, r"look\(s\) \[16\] are beyond --max-trials 12"),
                                ("0,4", None, "≥ 1")):
        with pytest.raises(PasshatError, match=message):
            Sequential.parse(looks, top)
    assert Sequential.from_record(Sequential((2, 5)).record()) == Sequential((2, 5))
    hsd = Sequential((2, 5), "hwang_shih_decani", -2.0)
    assert Sequential.from_record(hsd.record()) == hsd
    # a manifest written before γ existed records no gamma: it resumes with its own spending
    old = SequentialDesign.model_validate({"looks": [4, 8, 16], "spending": "obrien_fleming", "time_scale": "trials"})
    assert Sequential.from_record(old) == Sequential((4, 8, 16), "obrien_fleming", None, "every_look")
    with pytest.raises(PasshatError, match="gamma is the parameter"):
        Sequential((4, 8), "hwang_shih_decani")


def test_a_run_takes_the_shipped_spending_only() -> None:
    from pydantic import ValidationError

    from passhat.api.options import RunOptions

    assert RunOptions(sequential=Sequential((4, 8, 16))).sequential == (4, 8, 16)
    for design in (Sequential((4, 8, 16), "pocock"), Sequential((4, 8, 16), "hwang_shih_decani", -2.0),
                   Sequential((4, 8, 16), spend_at="every_look")):
        with pytest.raises(ValidationError, match="are for simulations"):
            RunOptions(sequential=design)
