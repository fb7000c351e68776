from decimal import Decimal

import pytest

from invoicer.stats import mean, median


def test_mean_of_amounts():
    assert mean([Decimal("10.00"), Decimal("20.00"), Decimal("45.00")]) == Decimal("25.00")


def test_median_of_an_odd_count():
    assert median([30, 7, 14]) == 14


def test_median_of_an_even_count():
    assert median([30, 7, 14, 21]) == 17.5


def test_median_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        median([])
