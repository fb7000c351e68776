"""How passhat prints an interval: each end rounded outwards, so the printed interval contains the computed one.

Rounding each end to nearest can print an interval narrower than the one computed: a lower bound of 0.819
shown as 0.82 claims a little more than the run showed, and the headline (which rounds outwards) and the
table would print the same bound as 0.81 and 0.82 on one screen. Every interval a report, the terminal or
``repr`` prints goes through :func:`interval`. Point estimates are rounded to nearest, as usual.
"""

from __future__ import annotations

import math

_EPS = 1e-9
"""Slack for binary floating point: 0.82 stored as 0.8199999999999999 is still printed as 0.82."""


def down(x: float, digits: int = 2, *, signed: bool = False) -> str:
    """``x`` rounded down to ``digits`` decimals (towards −∞)."""
    scale = 10**digits
    return _text(math.floor(x * scale + _EPS) / scale, digits, signed)


def up(x: float, digits: int = 2, *, signed: bool = False) -> str:
    """``x`` rounded up to ``digits`` decimals (towards +∞)."""
    scale = 10**digits
    return _text(math.ceil(x * scale - _EPS) / scale, digits, signed)


def interval(low: float, high: float, digits: int = 2, *, signed: bool = False) -> str:
    """``[low, high]`` with the low end rounded down and the high end up (without brackets: :func:`span`)."""
    return f"[{span(low, high, digits, signed=signed, sep=', ')}]"


def span(low: float, high: float, digits: int = 2, *, signed: bool = False, sep: str = "–") -> str:
    """``low–high``, rounded outwards, without brackets (the headline's form)."""
    return f"{down(low, digits, signed=signed)}{sep}{up(high, digits, signed=signed)}"


def _text(x: float, digits: int, signed: bool) -> str:
    x += 0.0  # -0.0 prints as "-0.00": an interval end at zero has no sign
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
