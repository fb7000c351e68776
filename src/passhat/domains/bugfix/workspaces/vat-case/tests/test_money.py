from decimal import Decimal

from invoicer.money import format_money, split_evenly, to_money


def test_to_money_rounds_half_up():
    assert to_money(Decimal("0.125")) == Decimal("0.13")
    assert to_money(Decimal("2.675")) == Decimal("2.68")
    assert to_money("19.994") == Decimal("19.99")


def test_split_evenly_adds_up_to_the_total():
    shares = split_evenly(Decimal("100.00"), 3)
    assert shares == [Decimal("33.34"), Decimal("33.33"), Decimal("33.33")]
    assert sum(shares) == Decimal("100.00")


def test_format_money():
    assert format_money(Decimal("1234.5")) == "1,234.50 EUR"
