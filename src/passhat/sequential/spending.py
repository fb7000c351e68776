"""α spending across looks (Lan & DeMets 1983) and the boundaries it implies, by recursive integration.

A sequential run looks at its evidence several times. Testing each look at the full α lets chance cross
the bar at one look or another: with three looks the false-PASS rate roughly doubles (issue 22). A
spending function ``α(τ)`` says how much of the error budget may have been used by time ``τ`` ∈ (0, 1]
(``α(1) = α``); the boundary ``c_k`` of look ``k`` is the z-value at which the chance of crossing for the
first time at look ``k``, under the null, is the increment ``α(τ_k) − α(τ_{k−1})``.

That chance depends on how the looks' statistics are correlated. For statistics with the canonical joint
distribution (Jennison & Turnbull 2000, §3.1; independent increments) ``corr(Z_i, Z_k) = √(I_i/I_k)``,
where ``I`` is the information (the inverse variance of the estimate) at each look; given ``Z_{k−1}`` the
next one is normal with mean ``ρ_k Z_{k−1}`` and variance ``1 − ρ_k²``, ``ρ_k = √(I_{k−1}/I_k)``, so the
sub-density of ``Z_k`` on the continuation region is carried from look to look by one convolution
(Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19). It is computed here on a grid with
Simpson's rule; ``tests/sequential/test_spending.py`` holds it to published boundaries (rpact).

Pure numerics: numpy and the standard library (no scipy on the run path, see ``stats._special``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

import numpy as np

from passhat.stats._special import ndtri

Spending = Literal["obrien_fleming", "pocock", "hwang_shih_decani"]
"""Lan–DeMets spending functions: ``obrien_fleming`` (2 − 2Φ(z_{1−α/2}/√τ): almost nothing early, nearly
α at the end), ``pocock`` (α·ln(1 + (e − 1)τ): about evenly over the looks), and ``hwang_shih_decani``
(α(1 − e^{−γτ})/(1 − e^{−γ}), a family with a parameter γ between them: γ = −4 is close to O'Brien–Fleming,
γ = 1 to Pocock, γ = 0 spends α in proportion to τ)."""

_LOWER = -9.0
"""Where the grid starts: Φ(−9) ≈ 1e-19, so what lies below it cannot change a probability we report."""
_POINTS = 401
"""Grid points per look (odd, for Simpson's rule); boundaries agree with rpact's to 1e-7, and to 1e-6 at ρ = 0.995."""
GAMMA_LIMIT = 40.0
"""|γ| beyond which e^{−γ} over- or underflows the quotient; the family is all but a step function there."""
_erfc = np.frompyfunc(math.erfc, 1, 1)


def spent(kind: Spending, alpha: float, tau: float, gamma: float | None = None) -> float:
    """The α spent by time ``tau`` ∈ [0, 1] (cumulative), for a one-sided test of size ``alpha``.

    O'Brien–Fleming type: 2 − 2Φ(Φ⁻¹(1 − α/2)/√τ); Pocock type: α·ln(1 + (e − 1)τ) (Lan & DeMets 1983;
    gsDesign's ``sfLDOF`` and ``sfLDPocock``); Hwang, Shih & DeCani (1990): α(1 − e^{−γτ})/(1 − e^{−γ}),
    ατ at γ = 0 (gsDesign's ``sfHSD``, rpact's ``asHSD``), which needs ``gamma`` and only it does. All
    are 0 at τ = 0 and α at τ = 1.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0 <= tau <= 1:
        raise ValueError(f"tau must be in [0, 1], got {tau}")
    if (kind == "hwang_shih_decani") != (gamma is not None):
        raise ValueError(f"gamma is the parameter of hwang_shih_decani spending only, got {kind!r} with gamma={gamma}")
    if gamma is not None and not (math.isfinite(gamma) and abs(gamma) <= GAMMA_LIMIT):
        raise ValueError(f"gamma must be finite, within ±{GAMMA_LIMIT:g}, got {gamma}")
    if tau == 0:
        return 0.0
    if kind == "obrien_fleming":
        return float(math.erfc(float(ndtri(1 - alpha / 2)) / math.sqrt(tau) / math.sqrt(2)))
    if kind == "pocock":
        return alpha * math.log1p((math.e - 1) * tau)
    if kind == "hwang_shih_decani" and gamma is not None:
        return alpha * tau if gamma == 0 else alpha * math.expm1(-gamma * tau) / math.expm1(-gamma)
    raise ValueError(f"spending must be 'obrien_fleming', 'pocock' or 'hwang_shih_decani', got {kind!r}")


def _tail(x: np.ndarray) -> np.ndarray:
    """1 − Φ(x), elementwise, accurate in the far tail (erfc)."""
    return np.asarray(0.5 * _erfc(x / math.sqrt(2)), dtype=float)


def _simpson(lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    z = np.linspace(lo, hi, _POINTS)
    w = np.ones(_POINTS)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return z, w * (hi - lo) / (_POINTS - 1) / 3.0


def upper_boundaries(increments: Sequence[float], information: Sequence[float]) -> list[float]:
    """z-boundaries ``c_1…c_K``: under the null the chance of first crossing at look k is ``increments[k]``.

    ``information`` is increasing (only ratios matter: ``corr(Z_i, Z_k) = √(I_i/I_k)``). An increment of 0
    gives ``c_k = +inf`` (nothing is spent at that look: it cannot cross). Only upper boundaries: the two
    decisions of a gate are each computed as if the other did not exist, which is conservative for both
    (stopping on the other side can only lower the chance of crossing this one).
    """
    if len(increments) != len(information) or not increments:
        raise ValueError("one increment and one information level per look, at least one look")
    if any(x < 0 for x in increments) or sum(increments) >= 1:
        raise ValueError(f"increments must be ≥ 0 and sum below 1, got {list(increments)}")
    if any(b <= a for a, b in zip(information, information[1:], strict=False)) or information[0] <= 0:
        raise ValueError(f"information must be positive and strictly increasing, got {list(information)}")
    return list(_boundaries(tuple(float(x) for x in increments), tuple(float(i) for i in information)))


def _boundaries(increments: tuple[float, ...], information: tuple[float, ...]) -> tuple[float, ...]:
    return _state(increments, information)[0]


@lru_cache(maxsize=8192)
def _state(increments: tuple[float, ...], information: tuple[float, ...]
           ) -> tuple[tuple[float, ...], np.ndarray, np.ndarray, np.ndarray]:
    """(boundaries, grid, quadrature weights, continuation sub-density after the last look) for a prefix of
    looks; each look extends its prefix's state, so designs sharing early looks share their work."""
    if not increments:
        return (), np.array([0.0]), np.array([1.0]), np.array([1.0])  # Z_0 ≡ 0: the first look is a plain normal
    bounds, z, w, density = _state(increments[:-1], information[:-1])
    k = len(increments) - 1
    rho = math.sqrt(information[k - 1] / information[k]) if k else 0.0
    sigma = math.sqrt(1 - rho * rho)
    mass = w * density  # the continuation sub-density times the quadrature weights
    c = _solve(mass, rho * z, sigma, increments[k])
    hi = min(c, -_LOWER) if math.isfinite(c) else -_LOWER
    grid, weights = _simpson(_LOWER, hi)
    kernel = np.exp(-0.5 * ((grid[:, None] - rho * z[None, :]) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
    return (*bounds, c), grid, weights, kernel @ mass


def _solve(mass: np.ndarray, centre: np.ndarray, sigma: float, target: float) -> float:
    """The c at which Σ mass · (1 − Φ((c − centre)/σ)) equals ``target`` (+inf for 0).

    Newton's method from the boundary that ignores earlier looks, kept inside a shrinking bracket (the
    chance of crossing falls with c), to 1e-12: about six evaluations instead of bisection's sixty.
    """
    if target <= 0:
        return math.inf
    lo, hi = -30.0, 20.0
    c = float(ndtri(1 - target))
    for _ in range(100):
        x = (c - centre) / sigma
        excess = float(mass @ _tail(x)) - target
        if excess > 0:
            lo = c
        else:
            hi = c
        slope = float(mass @ np.exp(-0.5 * x * x)) / (sigma * math.sqrt(2 * math.pi))
        step = excess / slope if slope > 0 else math.inf
        nxt = c + step
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if abs(nxt - c) < 1e-12 or hi - lo < 1e-12:
            return nxt
        c = nxt
    return c


def nominal_levels(boundaries: Sequence[float]) -> list[float]:
    """The one-sided p-value each boundary corresponds to, 1 − Φ(c): the level a look's test is run at."""
    return [0.0 if not math.isfinite(c) else float(_tail(np.array([c]))[0]) for c in boundaries]
