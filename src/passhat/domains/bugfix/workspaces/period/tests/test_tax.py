from decimal import Decimal

from invoicer.tax import vat_amount


def test_vat_by_country():
    assert vat_amount(Decimal("100.00"), "DE") == Decimal("19.00")
    assert vat_amount(Decimal("19.99"), "NL") == Decimal("4.20")


def test_country_code_in_any_case():
    assert vat_amount(Decimal("100.00"), "nl") == Decimal("21.00")
    assert vat_amount(Decimal("100.00"), " fr ") == Decimal("20.00")
