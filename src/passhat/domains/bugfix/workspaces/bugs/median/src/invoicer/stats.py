"""Figures for the monthly report: typical invoice amounts and days to payment."""

from collections.abc import Sequence
from decimal import Decimal


def mean(values: Sequence[Decimal]) -> Decimal:
    """The arithmetic mean of amounts; ValueError for no values."""
    if not values:
        raise ValueError("mean of no values")
    return sum(values, Decimal(0)) / len(values)


def median(values: Sequence[float]) -> float:
    """The middle value (e.g. of days to payment); for an even count, the mean of the two middle ones."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
